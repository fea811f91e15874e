// Metrics: the families of DESIGN.md ("Metrics") exist once each with their
// types and labels, recordings move them, and the HTTP exposer serves them
// (or fails with a Status when it cannot listen).
#include "server/metrics.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace sampler::server {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

int CountPrefix(const std::string& text, const std::string& prefix) {
  int n = 0;
  for (const std::string& line : Lines(text)) {
    if (line.rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

// The value of the sample line that starts with `series` exactly (name and
// labels as the text format writes them), or NaN when absent.
double Value(const std::string& text, const std::string& series) {
  for (const std::string& line : Lines(text)) {
    if (line.rfind(series + " ", 0) == 0) {
      return std::strtod(line.c_str() + series.size() + 1, nullptr);
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// The finite `le` bounds of a histogram series whose labels contain `label`.
std::vector<double> BucketBounds(const std::string& text,
                                 const std::string& name,
                                 const std::string& label) {
  std::vector<double> bounds;
  for (const std::string& line : Lines(text)) {
    if (line.rfind(name + "_bucket{", 0) != 0) continue;
    if (line.find(label) == std::string::npos) continue;
    const size_t le = line.find("le=\"");
    if (le == std::string::npos) continue;
    const std::string v =
        line.substr(le + 4, line.find('"', le + 4) - (le + 4));
    if (v != "+Inf") bounds.push_back(std::strtod(v.c_str(), nullptr));
  }
  return bounds;
}

void RecordSome(Metrics& m) {
  m.RequestDone("SampleGamma", "OK", 0.002);
  m.RequestDone("SampleGamma", "OK", 0.003);
  m.RequestDone("SampleGammaStream", "INVALID_ARGUMENT", 1e-5);
  m.QueueWait(Kind::kGamma, 1e-4);
  m.BatchClosed(Kind::kGamma, 3, 1000);
  m.BatchExecuted(Kind::kGamma, "cpu", 5e-4, 1000);
  m.BatchExecuted(Kind::kBoards, "0", 5e-5, 64);
  m.SetQueueDepth(Kind::kCategorical, 7);
  m.AddInflight(2);
  m.AddInflight(-1);
  m.SetPoolBytes("0", "used", 1 << 20);
  m.SetPoolBytes("0", "reserved", 1 << 21);
  m.Refused("SampleGamma", "overloaded");
  m.SetBuildInfo("1.2.3");
}

TEST(MetricsTest, FamiliesOnceWithTypes) {
  Metrics m;
  RecordSome(m);
  const std::string text = m.Scrape();
  const std::map<std::string, std::string> types = {
      {"sampler_requests_total", "counter"},
      {"sampler_request_duration_seconds", "histogram"},
      {"sampler_queue_wait_seconds", "histogram"},
      {"sampler_batch_requests", "histogram"},
      {"sampler_batch_items", "histogram"},
      {"sampler_device_seconds", "histogram"},
      {"sampler_items_total", "counter"},
      {"sampler_queue_depth", "gauge"},
      {"sampler_inflight_requests", "gauge"},
      {"sampler_device_pool_bytes", "gauge"},
      {"sampler_streams_stalled_total", "counter"},
      // Operators' view (issue 9 item 8).
      {"sampler_refused_total", "counter"},
      {"sampler_queue_items", "gauge"},
      {"sampler_queue_limit_items", "gauge"},
      {"sampler_build_info", "gauge"},
      {"process_resident_memory_bytes", "gauge"},
      {"process_virtual_memory_bytes", "gauge"},
      {"process_open_fds", "gauge"},
      {"process_max_fds", "gauge"},
  };
  for (const auto& [name, type] : types) {
    EXPECT_EQ(CountPrefix(text, "# TYPE " + name + " "), 1) << name;
    EXPECT_EQ(CountPrefix(text, "# TYPE " + name + " " + type), 1) << name;
    EXPECT_EQ(CountPrefix(text, "# HELP " + name + " "), 1) << name;
  }
  // Nothing beyond these families.
  EXPECT_EQ(CountPrefix(text, "# TYPE "), static_cast<int>(types.size()));
}

TEST(MetricsTest, LabelsAndValues) {
  Metrics m;
  RecordSome(m);
  const std::string text = m.Scrape();
  EXPECT_EQ(
      Value(text, "sampler_requests_total{code=\"OK\",method=\"SampleGamma\"}"),
      2);
  EXPECT_EQ(Value(text,
                  "sampler_requests_total{code=\"INVALID_ARGUMENT\","
                  "method=\"SampleGammaStream\"}"),
            1);
  // OK is pre-created for every RPC.
  EXPECT_EQ(Value(text,
                  "sampler_requests_total{code=\"OK\","
                  "method=\"GetServerInfo\"}"),
            0);
  EXPECT_EQ(Value(text,
                  "sampler_request_duration_seconds_count{code=\"OK\","
                  "method=\"SampleGamma\"}"),
            2);
  EXPECT_DOUBLE_EQ(Value(text,
                         "sampler_request_duration_seconds_sum{code=\"OK\","
                         "method=\"SampleGamma\"}"),
                   0.005);
  // Latency by code too: the fast refusals apart from the answers.
  EXPECT_EQ(Value(text,
                  "sampler_request_duration_seconds_count{code="
                  "\"INVALID_ARGUMENT\",method=\"SampleGammaStream\"}"),
            1);
  EXPECT_EQ(
      Value(text, "sampler_queue_wait_seconds_count{method=\"SampleGamma\"}"),
      1);
  EXPECT_EQ(Value(text, "sampler_batch_requests_sum{method=\"SampleGamma\"}"),
            3);
  EXPECT_EQ(Value(text, "sampler_batch_items_sum{method=\"SampleGamma\"}"),
            1000);
  EXPECT_EQ(Value(text,
                  "sampler_device_seconds_count{device=\"cpu\","
                  "method=\"SampleGamma\"}"),
            1);
  EXPECT_EQ(Value(text,
                  "sampler_device_seconds_count{device=\"0\","
                  "method=\"SampleBoards\"}"),
            1);
  EXPECT_EQ(Value(text, "sampler_items_total{method=\"SampleGamma\"}"), 1000);
  EXPECT_EQ(Value(text, "sampler_items_total{method=\"SampleBoards\"}"), 64);
  EXPECT_EQ(Value(text, "sampler_queue_depth{method=\"SampleCategorical\"}"),
            7);
  EXPECT_EQ(Value(text, "sampler_inflight_requests"), 1);
  EXPECT_EQ(Value(text,
                  "sampler_device_pool_bytes{device=\"0\","
                  "state=\"used\"}"),
            1 << 20);
  EXPECT_EQ(Value(text,
                  "sampler_device_pool_bytes{device=\"0\","
                  "state=\"reserved\"}"),
            1 << 21);

  // Counts move.
  m.RequestDone("SampleGamma", "OK", 0.001);
  m.BatchExecuted(Kind::kGamma, "cpu", 1e-3, 24);
  m.SetQueueDepth(Kind::kCategorical, 0);
  const std::string after = m.Scrape();
  EXPECT_EQ(Value(after,
                  "sampler_requests_total{code=\"OK\",method=\"SampleGamma\"}"),
            3);
  EXPECT_EQ(Value(after, "sampler_items_total{method=\"SampleGamma\"}"), 1024);
  EXPECT_EQ(Value(after,
                  "sampler_device_seconds_count{device=\"cpu\","
                  "method=\"SampleGamma\"}"),
            2);
  EXPECT_EQ(Value(after, "sampler_queue_depth{method=\"SampleCategorical\"}"),
            0);
}

// Issue 9 item 8: refusals by reason, queue depth in items, build info and
// the process's memory and descriptors.
TEST(MetricsTest, OperatorsView) {
  Metrics m;
  m.Refused("SampleGamma", "expired_on_arrival");
  m.Refused("SampleGammaStream", "overloaded");
  m.Refused("SampleGammaStream", "overloaded");
  m.Refused("NoSuchRpc", "no_such_reason");
  m.SetQueueItems(Kind::kGamma, 12345);
  m.SetQueueLimitItems(100000);
  m.SetBuildInfo("9.8.7");
  const std::string text = m.Scrape();
  EXPECT_EQ(Value(text,
                  "sampler_refused_total{method=\"SampleGamma\",reason="
                  "\"expired_on_arrival\"}"),
            1);
  EXPECT_EQ(Value(text,
                  "sampler_refused_total{method=\"SampleGammaStream\","
                  "reason=\"overloaded\"}"),
            2);
  EXPECT_EQ(Value(text,
                  "sampler_refused_total{method=\"unknown\",reason="
                  "\"other\"}"),
            1);
  EXPECT_EQ(text.find("no_such_reason"), std::string::npos);
  EXPECT_EQ(Value(text, "sampler_queue_items{method=\"SampleGamma\"}"), 12345);
  EXPECT_EQ(Value(text, "sampler_queue_items{method=\"SampleBoards\"}"), 0);
  EXPECT_EQ(Value(text, "sampler_queue_limit_items"), 100000);
  EXPECT_EQ(Value(text, "sampler_build_info{version=\"9.8.7\"}"), 1);
  // This test process: some resident memory, stdin/out/err at least open.
  EXPECT_GT(Value(text, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Value(text, "process_virtual_memory_bytes"),
            Value(text, "process_resident_memory_bytes"));
  EXPECT_GE(Value(text, "process_open_fds"), 3);
  EXPECT_GE(Value(text, "process_max_fds"), Value(text, "process_open_fds"));
  // Descriptors are counted afresh at each scrape.
  const double fds = Value(text, "process_open_fds");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  EXPECT_EQ(Value(m.Scrape(), "process_open_fds"), fds + 2);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
}

TEST(MetricsTest, UnknownLabelsAreBounded) {
  Metrics m;
  m.RequestDone("NoSuchRpc", "NOT_A_CODE", 0.1);
  m.RequestDone("AnotherRpc", "OK", 0.1);
  const std::string text = m.Scrape();
  EXPECT_EQ(Value(text,
                  "sampler_requests_total{code=\"UNKNOWN\","
                  "method=\"unknown\"}"),
            1);
  EXPECT_EQ(
      Value(text, "sampler_requests_total{code=\"OK\",method=\"unknown\"}"), 1);
  EXPECT_EQ(Value(text,
                  "sampler_request_duration_seconds_count{code=\"UNKNOWN\","
                  "method=\"unknown\"}"),
            1);
  EXPECT_EQ(Value(text,
                  "sampler_request_duration_seconds_count{code=\"OK\","
                  "method=\"unknown\"}"),
            1);
  EXPECT_EQ(text.find("NoSuchRpc"), std::string::npos);
}

TEST(MetricsTest, BucketsSpanMicrosecondsToSeconds) {
  Metrics m;
  RecordSome(m);
  const std::string text = m.Scrape();
  for (const char* name :
       {"sampler_request_duration_seconds", "sampler_queue_wait_seconds",
        "sampler_device_seconds"}) {
    const std::vector<double> b =
        BucketBounds(text, name, "method=\"SampleGamma\"");
    ASSERT_GE(b.size(), 15u) << name;  // about 3 per decade over 7 decades
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end())) << name;
    EXPECT_NEAR(b.front(), 1e-6, 1e-12) << name;
    EXPECT_NEAR(b.back(), 10, 1e-9) << name;
  }
  const std::vector<double> requests =
      BucketBounds(text, "sampler_batch_requests", "method=\"SampleGamma\"");
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests.front(), 1);
  EXPECT_EQ(requests.back(), 4096);
  const std::vector<double> items =
      BucketBounds(text, "sampler_batch_items", "method=\"SampleGamma\"");
  ASSERT_FALSE(items.empty());
  EXPECT_EQ(items.front(), 1);
  EXPECT_GE(items.back(), 1e8);

  // An observation lands in the right cumulative buckets: 1e-4 s is above
  // the 5e-5 bound and at the 1e-4 bound.
  EXPECT_EQ(Value(text,
                  "sampler_queue_wait_seconds_bucket{method="
                  "\"SampleGamma\",le=\"5e-05\"}"),
            0);
  EXPECT_EQ(Value(text,
                  "sampler_queue_wait_seconds_bucket{method="
                  "\"SampleGamma\",le=\"0.0001\"}"),
            1);
}

TEST(MetricsTest, ConcurrentRecording) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m, t] {
      for (int i = 0; i < 1000; ++i) {
        m.RequestDone(kRpcNames[i % kNumRpcs], kStatusCodeNames[(i + t) % 3],
                      1e-3);
        m.BatchExecuted(Kind::kDirichlet, t % 2 ? "cpu" : "1", 1e-4, 2);
        m.AddInflight(1);
        m.AddInflight(-1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const std::string text = m.Scrape();
  EXPECT_EQ(Value(text, "sampler_items_total{method=\"SampleDirichlet\"}"),
            8000);
  EXPECT_EQ(Value(text, "sampler_inflight_requests"), 0);
  double total = 0;
  for (const std::string& line : Lines(text)) {
    if (line.rfind("sampler_requests_total{", 0) == 0) {
      total += std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
  }
  EXPECT_EQ(total, 4000);
}

// A plain HTTP/1.0 GET on 127.0.0.1:port; the whole response, or "" on a
// socket error.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (send(fd, request.data(), request.size(), 0) ==
        static_cast<ssize_t>(request.size())) {
      char buf[4096];
      for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
        response.append(buf, static_cast<size_t>(n));
      }
    }
  }
  close(fd);
  return response;
}

TEST(MetricsTest, ExposerServesMetrics) {
  absl::StatusOr<std::unique_ptr<Metrics>> m = Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(m.ok()) << m.status();
  const int port = (*m)->BoundPort();
  ASSERT_GT(port, 0);
  RecordSome(**m);
  const std::string response = HttpGet(port, "/metrics");
  EXPECT_NE(response.find(" 200 "), std::string::npos) << response;
  for (const char* name :
       {"sampler_requests_total", "sampler_request_duration_seconds",
        "sampler_queue_wait_seconds", "sampler_batch_requests",
        "sampler_batch_items", "sampler_device_seconds", "sampler_items_total",
        "sampler_queue_depth", "sampler_inflight_requests",
        "sampler_device_pool_bytes"}) {
    EXPECT_NE(response.find(std::string("# TYPE ") + name + " "),
              std::string::npos)
        << name;
  }
  EXPECT_NE(response.find("sampler_requests_total{code=\"OK\","
                          "method=\"SampleGamma\"} 2"),
            std::string::npos);
}

TEST(MetricsTest, RegistryOnlyHasNoPort) {
  Metrics m;
  EXPECT_EQ(m.BoundPort(), -1);
}

TEST(MetricsTest, PortInUseIsAnError) {
  absl::StatusOr<std::unique_ptr<Metrics>> first =
      Metrics::Create("127.0.0.1:0");
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->BoundPort();
  ASSERT_GT(port, 0);
  absl::StatusOr<std::unique_ptr<Metrics>> second =
      Metrics::Create("127.0.0.1:" + std::to_string(port));
  EXPECT_FALSE(second.ok());
  // The first keeps serving.
  EXPECT_NE(HttpGet(port, "/metrics").find("sampler_inflight_requests"),
            std::string::npos);
}

TEST(MetricsTest, BadAddressIsAnError) {
  EXPECT_FALSE(Metrics::Create("not an address").ok());
}

// Streams cancelled for stalling (issue 9 item 2): one series per
// streamed RPC, 0 from the start; other names are not counted.
TEST(MetricsTest, StalledStreamsByStreamedRpc) {
  Metrics m;
  const char* series[] = {
      "sampler_streams_stalled_total{method=\"SampleCategoricalStream\"}",
      "sampler_streams_stalled_total{method=\"SampleGammaStream\"}",
      "sampler_streams_stalled_total{method=\"SampleBoardsStream\"}"};
  for (const char* name : series) EXPECT_EQ(Value(m.Scrape(), name), 0) << name;
  m.StreamStalled("SampleGammaStream");
  m.StreamStalled("SampleGammaStream");
  m.StreamStalled("SampleBoardsStream");
  m.StreamStalled("SampleGamma");  // not a stream: ignored
  m.StreamStalled("nonsense");
  const std::string text = m.Scrape();
  EXPECT_EQ(Value(text, series[0]), 0);
  EXPECT_EQ(Value(text, series[1]), 2);
  EXPECT_EQ(Value(text, series[2]), 1);
  EXPECT_EQ(CountPrefix(text, "sampler_streams_stalled_total{"), 3);
}

}  // namespace
}  // namespace sampler::server
