// Pins the generator and the counter layout of docs/randomness.md: any change
// here changes every answer the service has ever given.
#include "sampler/kernels/philox.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "sampler/kernels/gamma_core.h"

namespace sampler::kernels {
namespace {

// Philox4x32-10 known-answer vectors published with Random123.
TEST(PhiloxTest, KnownAnswers) {
  struct Kat {
    uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const uint64_t seed = (static_cast<uint64_t>(k.key[1]) << 32) | k.key[0];
    const uint64_t item = (static_cast<uint64_t>(k.ctr[2]) << 32) | k.ctr[1];
    const PhiloxBlock b =
        Philox(seed, static_cast<KindTag>(k.ctr[3]), item, k.ctr[0]);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.v[i], k.out[i]) << "word " << i;
  }
}

TEST(PhiloxTest, KindTagsAreStable) {
  // Contract version 2: gamma and Dirichlet moved from "GAM1" / "DIR1"
  // (0x47414d31 / 0x44495231, retired, never reused) to new tags.
  EXPECT_EQ(static_cast<uint32_t>(KindTag::kGamma), 0x47414d32u);
  EXPECT_EQ(static_cast<uint32_t>(KindTag::kDirichlet), 0x44495232u);
  EXPECT_EQ(static_cast<uint32_t>(KindTag::kCategorical), 0x43415431u);
  EXPECT_EQ(static_cast<uint32_t>(KindTag::kBoards), 0x42524431u);
}

TEST(PhiloxTest, EveryCounterWordMatters) {
  const PhiloxBlock base = Philox(7, KindTag::kGamma, 5, 3);
  const PhiloxBlock variants[] = {
      Philox(8, KindTag::kGamma, 5, 3),
      Philox(7ull | (1ull << 40), KindTag::kGamma, 5, 3),
      Philox(7, KindTag::kBoards, 5, 3),
      Philox(7, KindTag::kGamma, 6, 3),
      Philox(7, KindTag::kGamma, 5ull | (1ull << 33), 3),
      Philox(7, KindTag::kGamma, 5, 4),
  };
  for (const PhiloxBlock& v : variants) {
    EXPECT_NE(v.v[0], base.v[0]);
  }
}

// The rounds the GPU runs (gamma_core.h's PhiloxRounds), with round keys
// added up from the seed or read from PhiloxKeySchedule's table, give
// Random123's words: the host build of the device code path.
TEST(PhiloxTest, SpelledOutRoundsMatchRandom123) {
  std::mt19937_64 rng(20261126);
  for (int i = 0; i < 2000; ++i) {
    const uint64_t seed = i == 0 ? ~uint64_t{0} : rng();
    const uint64_t item = i == 1 ? ~uint64_t{0} : rng() >> (i % 40);
    const uint32_t draw = static_cast<uint32_t>(rng());
    const KindTag tag = i % 2 == 0 ? KindTag::kGamma : KindTag::kDirichlet;
    const PhiloxBlock want = Philox(seed, tag, item, draw);
    const PhiloxBlock from_seed = gamma_internal::PhiloxRounds(
        draw, static_cast<uint32_t>(item), static_cast<uint32_t>(item >> 32),
        static_cast<uint32_t>(tag),
        gamma_internal::SeedRoundKeys{static_cast<uint32_t>(seed),
                                      static_cast<uint32_t>(seed >> 32)});
    const PhiloxBlock from_table = gamma_internal::AttemptBlockFromKeys(
        PhiloxKeySchedule(seed), tag, item, draw);
    for (int w = 0; w < 4; ++w) {
      ASSERT_EQ(from_seed.v[w], want.v[w]) << "seed " << seed << " word " << w;
      ASSERT_EQ(from_table.v[w], want.v[w]) << "seed " << seed << " word " << w;
    }
  }
}

TEST(UniformTest, FloatEndpoints) {
  EXPECT_EQ(UniformFloat(0), 0.0f);
  EXPECT_EQ(UniformFloat(0xffffffffu), 1.0f - 0x1.0p-24f);
  EXPECT_EQ(UniformOpenFloat(0), 0x1.0p-24f);
  EXPECT_EQ(UniformOpenFloat(0xffffffffu), 1.0f);
  EXPECT_EQ(UniformFloat(0x80000000u), 0.5f);
}

TEST(UniformTest, DoubleEndpoints) {
  EXPECT_EQ(UniformDouble(0, 0), 0.0);
  EXPECT_EQ(UniformDouble(0xffffffffu, 0xffffffffu), 1.0 - 0x1.0p-53);
  EXPECT_EQ(UniformOpenDouble(0, 0), 0x1.0p-53);
  EXPECT_EQ(UniformOpenDouble(0xffffffffu, 0xffffffffu), 1.0);
  // The high word carries the most significant bits.
  EXPECT_EQ(UniformDouble(0, 0x80000000u), 0.5);
  EXPECT_EQ(UniformDouble(0x80000000u, 0), 0x1.0p-33);
}

}  // namespace
}  // namespace sampler::kernels
