// Helpers shared by the tests of request parsing (request_parse_test.cc)
// and of streams (stream_chunk_test.cc): requests written in text format,
// a fixed seed source, expected errors and two requests of a given size.
#ifndef SAMPLER_TESTS_SERVER_REQUEST_TEST_UTIL_H_
#define SAMPLER_TESTS_SERVER_REQUEST_TEST_UTIL_H_

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sampler/v1/sampler.pb.h"
#include "server/request_parse.h"

namespace sampler::server {

// A request (or any message) from its text format.
template <typename Msg>
Msg Text(const std::string& text) {
  Msg msg;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &msg))
      << text;
  return msg;
}

inline const SeedSource kSeeds = [] { return uint64_t{12345}; };

// A refusal: its code, and substrings its message must hold.
struct BadCase {
  std::string text;
  absl::StatusCode code;
  std::vector<std::string> substrings;
};

inline void ExpectError(const absl::Status& status, const BadCase& c) {
  SCOPED_TRACE(c.text);
  EXPECT_EQ(status.code(), c.code) << status;
  for (const std::string& s : c.substrings) {
    EXPECT_NE(std::string(status.message()).find(s), std::string::npos)
        << "message \"" << status.message() << "\" lacks \"" << s << "\"";
  }
}

inline constexpr absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
inline constexpr absl::StatusCode kRange = absl::StatusCode::kOutOfRange;

// `count` samples of one gamma group.
inline v1::SampleGammaRequest GammaCount(int64_t count, bool f32) {
  v1::SampleGammaRequest r;
  r.set_precision(f32 ? v1::PRECISION_FLOAT32 : v1::PRECISION_FLOAT64);
  v1::GammaGroup* g = r.mutable_groups()->add_groups();
  g->set_shape(1.5);
  g->set_count(count);
  return r;
}

// `rows` rows of `categories` equal weights, `draws` draws each.
inline v1::SampleCategoricalRequest CategoricalDraws(int64_t rows,
                                                     int32_t draws,
                                                     int64_t categories) {
  v1::SampleCategoricalRequest r;
  r.set_categories(categories);
  r.set_draws(draws);
  for (int64_t i = 0; i < rows * categories; ++i) {
    r.mutable_values()->mutable_f32()->add_values(1);
  }
  return r;
}

}  // namespace sampler::server

#endif  // SAMPLER_TESTS_SERVER_REQUEST_TEST_UTIL_H_
