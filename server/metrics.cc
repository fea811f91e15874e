#include "server/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace sampler::server {
namespace {

// Durations: 1 us .. 10 s at 1, 2.5, 5 per decade. Batches on a GPU take
// tens of microseconds, RPCs under load up to seconds. Each bound is m / 10^k
// with both operands exact, so it is the double nearest m * 10^-k and prints
// as such (le="1e-05", not the 9.999999999999999e-06 of repeated products).
std::vector<double> TimeBuckets() {
  std::vector<double> b;
  double power = 1e6;  // 10^k, exact
  for (int k = 6; k >= 0; --k, power /= 10) {
    for (double m : {1.0, 2.5, 5.0}) b.push_back(m / power);
  }
  b.push_back(10);
  return b;
}

// Requests per batch: 1, 2, 4, ..., 4096.
std::vector<double> RequestCountBuckets() {
  std::vector<double> b;
  for (double v = 1; v <= 4096; v *= 2) b.push_back(v);
  return b;
}

// Items per batch: 1, 4, 16, ..., 4^14 (about 2.7e8, past the 1e8 that a
// large batch reaches); powers of 4 keep the bucket count at 15.
std::vector<double> ItemCountBuckets() {
  std::vector<double> b;
  for (double v = 1; v <= 3e8; v *= 4) b.push_back(v);
  return b;
}

int KindIndex(Kind kind) { return static_cast<int>(kind); }

int RpcIndex(std::string_view rpc) {
  for (int i = 0; i < kNumRpcs; ++i) {
    if (kRpcNames[i] == rpc) return i;
  }
  return kNumRpcs;
}

int CodeIndex(std::string_view code) {
  for (int i = 0; i < kNumStatusCodes; ++i) {
    if (kStatusCodeNames[i] == code) return i;
  }
  return 2;  // UNKNOWN
}

std::string RpcLabel(int rpc) {
  return rpc < kNumRpcs ? std::string(kRpcNames[rpc]) : "unknown";
}

// Prometheus rejects nothing, but a negative duration or NaN would corrupt a
// histogram's sum for good; clocks are steady, so this is only a guard.
double NonNegative(double v) { return v >= 0 ? v : 0; }

int ReasonIndex(std::string_view reason) {
  for (int i = 0; i < kNumRefusalReasons; ++i) {
    if (kRefusalReasons[i] == reason) return i;
  }
  return kNumRefusalReasons - 1;  // "other"
}

prometheus::MetricFamily GaugeFamily(const std::string& name,
                                     const std::string& help, double value) {
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = value;
  family.metric.push_back(metric);
  return family;
}

}  // namespace

// The standard process metrics, read from /proc/self at each collection.
class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    // statm: size resident shared text lib data dt, in pages.
    if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
      unsigned long size = 0, resident = 0;
      if (std::fscanf(f, "%lu %lu", &size, &resident) == 2) {
        families.push_back(GaugeFamily("process_resident_memory_bytes",
                                       "Resident memory size in bytes.",
                                       resident * page));
        families.push_back(GaugeFamily("process_virtual_memory_bytes",
                                       "Virtual memory size in bytes.",
                                       size * page));
      }
      std::fclose(f);
    }
    if (DIR* dir = opendir("/proc/self/fd")) {
      int64_t n = 0;
      while (const dirent* entry = readdir(dir)) {
        if (entry->d_name[0] != '.') ++n;
      }
      closedir(dir);
      // Less the descriptor of the listing itself.
      families.push_back(GaugeFamily("process_open_fds",
                                     "Number of open file descriptors.",
                                     static_cast<double>(n - 1)));
    }
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      families.push_back(GaugeFamily(
          "process_max_fds", "Maximum number of open file descriptors.",
          limit.rlim_cur == RLIM_INFINITY
              ? -1.0
              : static_cast<double>(limit.rlim_cur)));
    }
    return families;
  }
};

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {
  using prometheus::BuildCounter;
  using prometheus::BuildGauge;
  using prometheus::BuildHistogram;
  prometheus::Registry& r = *registry_;

  requests_total_ = &BuildCounter()
                         .Name("sampler_requests_total")
                         .Help("Finished RPCs by method and gRPC status code.")
                         .Register(r);
  request_duration_family_ =
      &BuildHistogram()
           .Name("sampler_request_duration_seconds")
           .Help("RPC latency from arrival to the final status, in seconds.")
           .Register(r);
  auto& queue_wait =
      BuildHistogram()
          .Name("sampler_queue_wait_seconds")
          .Help("Time a job waited in its batcher queue, in seconds.")
          .Register(r);
  auto& batch_requests = BuildHistogram()
                             .Name("sampler_batch_requests")
                             .Help("Requests (jobs) per executed batch.")
                             .Register(r);
  auto& batch_items = BuildHistogram()
                          .Name("sampler_batch_items")
                          .Help("Work items per executed batch.")
                          .Register(r);
  device_seconds_ =
      &BuildHistogram()
           .Name("sampler_device_seconds")
           .Help("Execution time of one batch on its device, in seconds.")
           .Register(r);
  auto& items_total = BuildCounter()
                          .Name("sampler_items_total")
                          .Help("Work items executed.")
                          .Register(r);
  auto& queue_depth = BuildGauge()
                          .Name("sampler_queue_depth")
                          .Help("Requests waiting in a batcher queue.")
                          .Register(r);
  auto& inflight = BuildGauge()
                       .Name("sampler_inflight_requests")
                       .Help("RPCs being served.")
                       .Register(r);
  pool_bytes_ = &BuildGauge()
                     .Name("sampler_device_pool_bytes")
                     .Help("Bytes in a device memory pool, by state.")
                     .Register(r);

  const std::vector<double> time_buckets = TimeBuckets();
  for (int i = 0; i < kNumRpcs; ++i) {
    request_duration_[i][0].store(
        &request_duration_family_->Add(
            {{"method", RpcLabel(i)}, {"code", "OK"}}, time_buckets),
        std::memory_order_release);
    // OK is pre-created so that rate() of every method starts at zero
    // instead of being absent until its first request; other codes (and the
    // "unknown" method) appear on first use.
    requests_[i][0].store(
        &requests_total_->Add({{"method", RpcLabel(i)}, {"code", "OK"}}),
        std::memory_order_release);
  }

  const std::vector<double> request_buckets = RequestCountBuckets();
  const std::vector<double> item_buckets = ItemCountBuckets();
  for (Kind kind : kAllKinds) {
    const int k = KindIndex(kind);
    const prometheus::Labels labels = {{"method", MethodName(kind)}};
    queue_wait_[k] = &queue_wait.Add(labels, time_buckets);
    batch_requests_[k] = &batch_requests.Add(labels, request_buckets);
    batch_items_[k] = &batch_items.Add(labels, item_buckets);
    items_total_[k] = &items_total.Add(labels);
    queue_depth_[k] = &queue_depth.Add(labels);
  }
  inflight_ = &inflight.Add({});

  // Operators' view (issue 9 item 8).
  refused_family_ =
      &BuildCounter()
           .Name("sampler_refused_total")
           .Help(
               "Calls answered without their work being done, by method and "
               "reason (expired_on_arrival, overloaded, over_limit, invalid, "
               "unauthenticated, other).")
           .Register(r);
  auto& queue_items = BuildGauge()
                          .Name("sampler_queue_items")
                          .Help(
                              "Work items waiting in a batcher queue (the "
                              "unit of --max_queued_items).")
                          .Register(r);
  for (Kind kind : kAllKinds) {
    queue_items_[KindIndex(kind)] =
        &queue_items.Add({{"method", MethodName(kind)}});
  }
  queue_limit_items_ =
      &BuildGauge()
           .Name("sampler_queue_limit_items")
           .Help(
               "Work items that may wait in all queues together "
               "(--max_queued_items).")
           .Register(r)
           .Add({});
  build_info_ = &BuildGauge()
                     .Name("sampler_build_info")
                     .Help("1, labelled with the server's version.")
                     .Register(r);
  process_ = std::make_shared<ProcessCollector>();

  // Stream protection (issue 9 item 2), one series per streamed RPC, made
  // up front so that the count starts at 0.
  auto& streams_stalled =
      BuildCounter()
          .Name("sampler_streams_stalled_total")
          .Help(
              "Streams cancelled because their client read nothing for "
              "--stream_stall_timeout.")
          .Register(r);
  for (int i = 0; i < kNumRpcs; ++i) {
    if (kRpcNames[i].size() > 6 &&
        kRpcNames[i].substr(kRpcNames[i].size() - 6) == "Stream") {
      streams_stalled_[i] = &streams_stalled.Add({{"method", RpcLabel(i)}});
    }
  }
}

Metrics::~Metrics() = default;

absl::StatusOr<std::unique_ptr<Metrics>> Metrics::Create(
    const std::string& listen) {
  auto metrics = std::make_unique<Metrics>();
  // prometheus-cpp (through CivetServer) reports a failure to listen by
  // throwing from the Exposer's constructor; this is the one place where it
  // is turned into a Status.
  try {
    metrics->exposer_ = std::make_unique<prometheus::Exposer>(listen);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on \"", listen, "\": ", e.what()));
  } catch (...) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on \"", listen, "\""));
  }
  metrics->exposer_->RegisterCollectable(metrics->registry_);
  metrics->exposer_->RegisterCollectable(metrics->process_);
  return metrics;
}

prometheus::Counter& Metrics::RequestCounter(int rpc, int code) {
  std::atomic<prometheus::Counter*>& slot = requests_[rpc][code];
  prometheus::Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter =
        &requests_total_->Add({{"method", RpcLabel(rpc)},
                               {"code", std::string(kStatusCodeNames[code])}});
    slot.store(counter, std::memory_order_release);
  }
  return *counter;
}

prometheus::Histogram& Metrics::RequestDuration(int rpc, int code) {
  std::atomic<prometheus::Histogram*>& slot = request_duration_[rpc][code];
  prometheus::Histogram* h = slot.load(std::memory_order_acquire);
  if (h == nullptr) {
    // Family::Add returns the existing histogram for the same labels.
    h = &request_duration_family_->Add(
        {{"method", RpcLabel(rpc)},
         {"code", std::string(kStatusCodeNames[code])}},
        TimeBuckets());
    slot.store(h, std::memory_order_release);
  }
  return *h;
}

void Metrics::RequestDone(std::string_view rpc, std::string_view code_name,
                          double seconds) {
  const int r = RpcIndex(rpc);
  const int c = CodeIndex(code_name);
  RequestCounter(r, c).Increment();
  RequestDuration(r, c).Observe(NonNegative(seconds));
}

void Metrics::Refused(std::string_view rpc, std::string_view reason) {
  const int r = RpcIndex(rpc);
  const int why = ReasonIndex(reason);
  std::atomic<prometheus::Counter*>& slot = refused_[r][why];
  prometheus::Counter* counter = slot.load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter =
        &refused_family_->Add({{"method", RpcLabel(r)},
                               {"reason", std::string(kRefusalReasons[why])}});
    slot.store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void Metrics::SetQueueItems(Kind kind, int64_t items) {
  queue_items_[KindIndex(kind)]->Set(static_cast<double>(items));
}

void Metrics::SetQueueLimitItems(int64_t items) {
  queue_limit_items_->Set(static_cast<double>(items));
}

void Metrics::SetBuildInfo(const std::string& version) {
  build_info_->Add({{"version", version}}).Set(1);
}

void Metrics::QueueWait(Kind kind, double seconds) {
  queue_wait_[KindIndex(kind)]->Observe(NonNegative(seconds));
}

void Metrics::BatchClosed(Kind kind, int64_t requests, int64_t items) {
  batch_requests_[KindIndex(kind)]->Observe(static_cast<double>(requests));
  batch_items_[KindIndex(kind)]->Observe(static_cast<double>(items));
}

void Metrics::BatchExecuted(Kind kind, const std::string& device,
                            double seconds, int64_t items) {
  const int k = KindIndex(kind);
  prometheus::Histogram* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] =
        device_seconds_by_kind_device_.try_emplace({k, device}, nullptr);
    if (inserted) {
      it->second = &device_seconds_->Add(
          {{"method", MethodName(kind)}, {"device", device}}, TimeBuckets());
    }
    h = it->second;
  }
  h->Observe(NonNegative(seconds));
  if (items > 0) items_total_[k]->Increment(static_cast<double>(items));
}

void Metrics::SetQueueDepth(Kind kind, int64_t requests) {
  queue_depth_[KindIndex(kind)]->Set(static_cast<double>(requests));
}

void Metrics::AddInflight(int64_t delta) {
  inflight_->Increment(static_cast<double>(delta));
}

void Metrics::SetPoolBytes(const std::string& device, const std::string& state,
                           int64_t bytes) {
  prometheus::Gauge* g = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] =
        pool_bytes_by_device_state_.try_emplace({device, state}, nullptr);
    if (inserted) {
      it->second = &pool_bytes_->Add({{"device", device}, {"state", state}});
    }
    g = it->second;
  }
  g->Set(static_cast<double>(bytes));
}

void Metrics::StreamStalled(std::string_view rpc) {
  prometheus::Counter* counter = streams_stalled_[RpcIndex(rpc)];
  if (counter != nullptr) counter->Increment();
}

std::string Metrics::Scrape() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  for (prometheus::MetricFamily& family : process_->Collect()) {
    families.push_back(std::move(family));
  }
  return prometheus::TextSerializer().Serialize(families);
}

int Metrics::BoundPort() const {
  if (exposer_ == nullptr) return -1;
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? -1 : ports.front();
}

}  // namespace sampler::server
