// PoolMetricsBackend (server/pool_metrics.h): the wrapped backend's pool
// usage reaches sampler_device_pool_bytes by the time a batch's done runs,
// and everything else is the wrapped backend's.
#include "server/pool_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/backend.h"
#include "server/jobs.h"
#include "server/metrics.h"

namespace sampler::server {
namespace {

// Completes each batch at once, from inside Run (enough here), reporting
// `pools` as its pool usage.
class PoolsBackend : public Backend {
 public:
  explicit PoolsBackend(std::vector<PoolBytes> pools)
      : pools_(std::move(pools)) {}
  BackendInfo Info() const override { return {"fake", {}, "test"}; }
  int Capacity() const override { return 3; }
  void Run(AnyBatch batch, BatchDone done) override {
    ++runs;
    last_index = batch.index();
    done(BatchResult{absl::OkStatus(), "7", 0.5});
  }
  std::vector<PoolBytes> PoolUsage() const override { return pools_; }

  int runs = 0;
  size_t last_index = 0;

 private:
  std::vector<PoolBytes> pools_;
};

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(PoolMetricsBackendTest, RecordsPoolsBeforeDone) {
  PoolsBackend inner({{"0", 123, 456}, {"1", 7, 8}});
  Metrics metrics;
  PoolMetricsBackend backend(&inner, &metrics);
  bool called = false;
  backend.Run(Batch<GammaJob>{}, [&](BatchResult result) {
    called = true;
    EXPECT_EQ(result.device, "7");
    EXPECT_EQ(result.device_seconds, 0.5);
    const std::string text = metrics.Scrape();
    EXPECT_TRUE(Contains(
        text, "sampler_device_pool_bytes{device=\"0\",state=\"used\"} 123"))
        << text;
    EXPECT_TRUE(Contains(
        text,
        "sampler_device_pool_bytes{device=\"0\",state=\"reserved\"} 456"));
    EXPECT_TRUE(Contains(
        text, "sampler_device_pool_bytes{device=\"1\",state=\"used\"} 7"));
    EXPECT_TRUE(Contains(
        text, "sampler_device_pool_bytes{device=\"1\",state=\"reserved\"} 8"));
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(inner.runs, 1);
  EXPECT_EQ(inner.last_index, AnyBatch(Batch<GammaJob>{}).index());
}

TEST(PoolMetricsBackendTest, ForwardsTheRestAndSetsNothingWithoutPools) {
  PoolsBackend inner({});
  Metrics metrics;
  PoolMetricsBackend backend(&inner, &metrics);
  EXPECT_EQ(backend.Info().name, "fake");
  EXPECT_EQ(backend.Info().reason, "test");
  EXPECT_EQ(backend.Capacity(), 3);
  EXPECT_TRUE(backend.PoolUsage().empty());
  bool called = false;
  backend.Run(Batch<BoardsJob>{}, [&](BatchResult) { called = true; });
  EXPECT_TRUE(called);
  EXPECT_FALSE(Contains(metrics.Scrape(), "sampler_device_pool_bytes{"));
}

}  // namespace
}  // namespace sampler::server
