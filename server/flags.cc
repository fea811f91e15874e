#include "server/flags.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "sampler/kernels/status_macros.h"
#include "server/gpu_inline.h"
#include "server/request_parse.h"
#include "server/stream_chunk.h"

namespace sampler::server {
namespace {

template <typename... Parts>
absl::Status Bad(absl::string_view flag, const Parts&... parts) {
  return absl::InvalidArgumentError(absl::StrCat(flag, "=", parts...));
}

std::string Quoted(absl::string_view value) {
  return absl::StrCat("\"", value, "\"");
}

absl::Status AtLeast(absl::string_view flag, int64_t value, int64_t least,
                     absl::string_view why = "") {
  if (value >= least) return absl::OkStatus();
  return Bad(flag, value, ": must be >= ", least, why);
}

absl::Status InRange(absl::string_view flag, int64_t value, int64_t least,
                     int64_t most) {
  if (value >= least && value <= most) return absl::OkStatus();
  return Bad(flag, value, ": must be between ", least, " and ", most);
}

absl::Status Duration(absl::string_view flag, absl::Duration value,
                      bool allow_zero, bool allow_infinite = false) {
  if (allow_infinite && value == absl::InfiniteDuration()) {
    return absl::OkStatus();
  }
  if (value == absl::InfiniteDuration() || value == -absl::InfiniteDuration()) {
    return Bad(flag, absl::FormatDuration(value), ": must be finite");
  }
  if (value < absl::ZeroDuration() ||
      (!allow_zero && value == absl::ZeroDuration())) {
    return Bad(flag, absl::FormatDuration(value), ": must be ",
               allow_zero ? ">= 0" : "> 0", " (e.g. 500ms, 30s)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckListenAddress(absl::string_view flag, absl::string_view value,
                                bool allow_empty, bool allow_unix) {
  if (value.empty()) {
    if (allow_empty) return absl::OkStatus();
    return Bad(flag, Quoted(value), ": must be HOST:PORT, e.g. 0.0.0.0:50051");
  }
  if (allow_unix && (absl::StartsWith(value, "unix:") ||
                     absl::StartsWith(value, "unix-abstract:"))) {
    return absl::OkStatus();
  }
  const size_t colon = value.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return Bad(flag, Quoted(value), ": must be HOST:PORT, e.g. 0.0.0.0:",
               allow_unix ? "50051" : "9464");
  }
  const absl::string_view host = value.substr(0, colon);
  const absl::string_view port = value.substr(colon + 1);
  // An IPv6 host is bracketed ("[::]:50051"): a bare "::1:80" is ambiguous.
  if (absl::StrContains(host, ':') &&
      !(absl::StartsWith(host, "[") && absl::EndsWith(host, "]"))) {
    return Bad(flag, Quoted(value),
               ": an IPv6 host must be in brackets, e.g. [::]:50051");
  }
  int number = -1;
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(),
                   [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(port, &number) || number > 65535) {
    return Bad(flag, Quoted(value),
               ": the port must be 0 to 65535 (0: any "
               "free port)");
  }
  return absl::OkStatus();
}

int ListenPort(absl::string_view value) {
  const size_t colon = value.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(value.substr(colon + 1), &port)) {
    return -1;
  }
  return port;
}

int64_t LargestServerChunkItems(const RequestLimits& limits) {
  RequestLimits open = limits;
  open.max_items_per_stream = std::numeric_limits<int64_t>::max() / 4;
  const SeedSource seeds = [] { return uint64_t{1}; };
  int64_t largest = 1;
  // `job`: a parse's answer; its type picks the stream unit.
  auto consider = [&](const auto& job) {
    if (!job.ok() || *job == nullptr) return;
    const int64_t units = ChunkSize(**job, 0, open);
    largest = std::max(largest, units * (*job)->items /
                                    std::max<int64_t>(StreamUnits(**job), 1));
  };
  // The smallest units of each streamed kind give the most items per chunk:
  // float32 and float64 gamma samples, one-draw and many-draw categorical
  // rows, positions of a one-site board.
  for (const v1::Precision precision :
       {v1::PRECISION_FLOAT32, v1::PRECISION_FLOAT64}) {
    v1::SampleGammaRequest gamma;
    gamma.set_precision(precision);
    v1::GammaGroup* group = gamma.mutable_groups()->add_groups();
    group->set_shape(1);
    group->set_scale(1);
    group->set_count(int64_t{1} << 40);
    consider(ParseGamma(gamma, open, seeds, /*streamed=*/true));

    for (const int draws : {1, 1024}) {
      v1::SampleCategoricalRequest categorical;
      categorical.set_precision(precision);
      categorical.set_categories(1);
      categorical.set_draws(draws);
      const int rows = draws == 1 ? 1 << 21 : 1 << 13;
      if (precision == v1::PRECISION_FLOAT32) {
        categorical.mutable_values()->mutable_f32()->mutable_values()->Resize(
            rows, 1.0f);
      } else {
        categorical.mutable_values()->mutable_f64()->mutable_values()->Resize(
            rows, 1.0);
      }
      consider(ParseCategorical(categorical, open, seeds, /*streamed=*/true));
    }
  }
  v1::SampleBoardsRequest boards;
  boards.set_rows(1);
  boards.set_cols(1);
  boards.add_stones(1);
  boards.set_count(int64_t{1} << 40);
  consider(ParseBoards(boards, open, seeds, /*streamed=*/true));
  return largest;
}

absl::StatusOr<std::vector<int>> ParseGpuList(
    const std::vector<std::string>& gpus) {
  std::vector<int> indices;
  std::set<int> seen;
  for (const std::string& gpu : gpus) {
    int index = -1;
    if (!absl::SimpleAtoi(gpu, &index) || index < 0) {
      return Bad("--gpus", Quoted(gpu), ": not a GPU index (0, 1, ...)");
    }
    if (!seen.insert(index).second) {
      return Bad("--gpus", index, ": listed twice");
    }
    indices.push_back(index);
  }
  return indices;
}

absl::Status CheckServerFlags(const ServerFlags& f) {
  SAMPLER_RETURN_IF_ERROR(CheckListenAddress("--listen", f.listen,
                                             /*allow_empty=*/false,
                                             /*allow_unix=*/true));
  SAMPLER_RETURN_IF_ERROR(CheckListenAddress("--metrics_listen",
                                             f.metrics_listen,
                                             /*allow_empty=*/true,
                                             /*allow_unix=*/false));
  if (f.backend != "auto" && f.backend != "cpu" && f.backend != "cuda") {
    return Bad("--backend", Quoted(f.backend), ": must be auto, cpu or cuda");
  }
  if (f.gpu_wait != "auto" && f.gpu_wait != "spin" && f.gpu_wait != "yield" &&
      f.gpu_wait != "block") {
    return Bad("--gpu_wait", Quoted(f.gpu_wait),
               ": must be auto, spin, yield or block");
  }
  if (!ParseGpuInline(f.gpu_inline).has_value()) {
    return Bad("--gpu_inline", Quoted(f.gpu_inline),
               ": must be always, auto or never");
  }
  for (const absl::Status& s : {
           AtLeast("--max_batch_items", f.max_batch_items, 1,
                   " (1: no batching)"),
           Duration("--max_batch_delay", f.max_batch_delay, true),
           AtLeast("--max_items_per_request", f.max_items_per_request, 1),
           AtLeast("--max_items_per_stream", f.max_items_per_stream, 1),
           AtLeast("--max_enumerate_pairs", f.max_enumerate_pairs, 1),
           AtLeast("--max_enumerate_terms", f.max_enumerate_terms, 1),
           InRange("--max_message_bytes", f.max_message_bytes, kMinMessageBytes,
                   std::numeric_limits<int32_t>::max()),
           AtLeast("--max_queued_items", f.max_queued_items, 1),
           InRange("--worker_threads", f.worker_threads, 0, kMaxWorkerThreads),
           AtLeast("--answer_cache_bytes", f.answer_cache_bytes, 0,
                   " (0: none)"),
           InRange("--streams_per_gpu", f.streams_per_gpu, 1,
                   kMaxStreamsPerGpu),
           AtLeast("--gpu_pool_limit_bytes", f.gpu_pool_limit_bytes, 0,
                   " (0: no cap)"),
           AtLeast("--gpu_pool_release_threshold_bytes",
                   f.gpu_pool_release_threshold_bytes, 0),
           AtLeast("--cpu_below_items", f.cpu_below_items, 0, " (0: off)"),
           AtLeast("--gpu_inline_below_items", f.gpu_inline_below_items, 0,
                   " (0: off)"),
           InRange("--gpu_eager_batches", f.gpu_eager_batches, 1,
                   kMaxStreamsPerGpu),
           Duration("--drain_delay", f.drain_delay, true),
           Duration("--shutdown_grace", f.shutdown_grace, true),
           InRange("--max_concurrent_streams", f.max_concurrent_streams, 1,
                   std::numeric_limits<int32_t>::max()),
           Duration("--max_connection_age", f.max_connection_age, false,
                    /*allow_infinite=*/true),
           Duration("--max_connection_age_grace", f.max_connection_age_grace,
                    false),
           Duration("--handshake_timeout", f.handshake_timeout, false),
       }) {
    SAMPLER_RETURN_IF_ERROR(s);
  }
  // The quota must hold at least one largest message (a request of
  // --max_message_bytes is buffered whole before it is parsed).
  if (f.memory_quota_bytes <
      std::max(kMinMemoryQuotaBytes, 2 * f.max_message_bytes)) {
    return Bad("--memory_quota_bytes", f.memory_quota_bytes, ": must be >= ",
               std::max(kMinMemoryQuotaBytes, 2 * f.max_message_bytes),
               " (16 MiB, and twice --max_message_bytes: one largest request "
               "and one largest answer must fit)");
  }
  return ParseGpuList(f.gpus).status();
}

std::vector<std::string> ServerFlagNotes(const ServerFlags& f) {
  std::vector<std::string> notes;
  RequestLimits limits;
  limits.max_items_per_request = f.max_items_per_request;
  limits.max_items_per_stream = f.max_items_per_stream;
  limits.max_message_bytes = f.max_message_bytes;
  limits.max_enumerate_pairs = f.max_enumerate_pairs;
  const int64_t chunk = LargestServerChunkItems(limits);
  if (f.max_queued_items < chunk) {
    notes.push_back(absl::StrCat(
        "--max_queued_items=", f.max_queued_items,
        " is below the largest stream chunk the server picks (", chunk,
        " items under --max_items_per_request and --max_message_bytes): "
        "unary calls and streams whose client sets a smaller chunk size "
        "work, streams that leave the chunk size to the server may not"));
  }
  return notes;
}

}  // namespace sampler::server
