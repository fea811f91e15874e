#include "server/metrics.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
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

}  // namespace

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
    request_duration_[i] =
        &request_duration_family_->Add({{"method", RpcLabel(i)}}, time_buckets);
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

  // Refusals before any handler (issue 9 items 2 and 9): a separate block.
  refused_total_ = &BuildCounter()
                        .Name("sampler_refused_total")
                        .Help(
                            "Calls refused before reaching a handler, by "
                            "reason (bad_body: not a valid protobuf "
                            "request message).")
                        .Register(r);
  for (const char* reason : {"bad_body"}) {
    refused_total_->Add({{"reason", reason}});
  }

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

void Metrics::Refused(std::string_view reason) {
  refused_total_->Add({{"reason", std::string(reason)}}).Increment();
}

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

void Metrics::RequestDone(std::string_view rpc, std::string_view code_name,
                          double seconds) {
  const int r = RpcIndex(rpc);
  RequestCounter(r, CodeIndex(code_name)).Increment();
  prometheus::Histogram* h = nullptr;
  if (r < kNumRpcs) {
    h = request_duration_[r];
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (request_duration_[r] == nullptr) {
      request_duration_[r] = &request_duration_family_->Add(
          {{"method", RpcLabel(r)}}, TimeBuckets());
    }
    h = request_duration_[r];
  }
  h->Observe(NonNegative(seconds));
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
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

int Metrics::BoundPort() const {
  if (exposer_ == nullptr) return -1;
  const std::vector<int> ports = exposer_->GetListeningPorts();
  return ports.empty() ? -1 : ports.front();
}

}  // namespace sampler::server
