// Shared pieces of the libFuzzer targets in tests/fuzz (issue #6, item 1).
//
// Each target takes arbitrary bytes as one RPC's request message, validates
// it with the service's own Parse* under small RequestLimits (so that every
// accepted input executes in milliseconds), binds the outputs into a
// response exactly as the service does, executes the job on a CpuBackend
// (one worker thread, as a batch), and checks invariants: rejections are
// INVALID_ARGUMENT or OUT_OF_RANGE with a message, accepted requests give
// well-formed answers that fit the response size limit, and the backend's
// answer is bit for bit the kernel's CPU function called directly on the
// whole job. A broken invariant prints what broke and aborts, which
// libFuzzer reports as a crash (and the regression test as a failure).
//
// Input encoding: bytes starting with '#' are read as the request in
// protobuf text format (the '#' line is a comment), anything else as the
// binary wire format. Text seeds keep the corpus readable and reach deep
// fields quickly; binary seeds exercise the wire parser.
//
// Two build modes (tests/fuzz/CMakeLists.txt):
//   - libFuzzer (SAMPLER_FUZZ=ON, clang): SAMPLER_FUZZ_TARGET(name) defines
//     LLVMFuzzerTestOneInput, one executable per target.
//   - regression (-DSAMPLER_FUZZ_REGRESSION, the normal gcc build): it
//     defines a function registered under `name`, and
//     fuzz_regression_test.cc replays tests/fuzz/corpus/<name>/ and
//     tests/fuzz/regressions/<name>/ through every registered target.
#ifndef SAMPLER_TESTS_FUZZ_FUZZ_TARGET_H_
#define SAMPLER_TESTS_FUZZ_FUZZ_TARGET_H_

#include <cmath>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "sampler/v1/sampler.pb.h"
#include "server/cpu_backend.h"
#include "server/jobs.h"
#include "server/request_parse.h"
#include "server/response_bind.h"

namespace sampler::fuzz {

using FuzzFn = int (*)(const uint8_t* data, size_t size);

// Targets by name (regression mode only fills it).
inline std::map<std::string, FuzzFn>& Registry() {
  static auto* registry = new std::map<std::string, FuzzFn>;
  return *registry;
}
inline bool Register(const char* name, FuzzFn fn) {
  Registry()[name] = fn;
  return true;
}

}  // namespace sampler::fuzz

#ifdef SAMPLER_FUZZ_REGRESSION
#define SAMPLER_FUZZ_TARGET(name)                                        \
  static int SamplerFuzzTarget_##name(const uint8_t* data, size_t size); \
  [[maybe_unused]] static const bool sampler_fuzz_registered_##name =    \
      ::sampler::fuzz::Register(#name, &SamplerFuzzTarget_##name);       \
  static int SamplerFuzzTarget_##name(const uint8_t* data, size_t size)
#else
#define SAMPLER_FUZZ_TARGET(name) \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
#endif

namespace sampler::fuzz {

namespace v1 = ::sampler::v1;
namespace server = ::sampler::server;

// ------------------------------------------------------------- failures --

[[noreturn]] inline void Fail(const std::string& what, const char* file,
                              int line) {
  std::fprintf(stderr, "\nFUZZ INVARIANT BROKEN at %s:%d: %s\n", file, line,
               what.c_str());
  std::fflush(stderr);
  std::abort();
}

// FUZZ_CHECK(condition, parts...): on failure, prints the condition and the
// parts (absl::StrCat) and aborts; the parts are built only on failure.
#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      ::sampler::fuzz::Fail(                                               \
          absl::StrCat("FUZZ_CHECK(" #cond ") ", ##__VA_ARGS__), __FILE__, \
          __LINE__);                                                       \
    }                                                                      \
  } while (false)

// ----------------------------------------------------------------- input --

class SilentErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int, google::protobuf::io::ColumnNumber,
                const std::string&) override {}
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}
};

// The request from the fuzzer's bytes: text format after a leading '#',
// else the wire format. False when the bytes are not a message.
template <typename Message>
bool ParseInput(const uint8_t* data, size_t size, Message* message) {
  if (size > 0 && data[0] == '#') {
    google::protobuf::TextFormat::Parser parser;
    SilentErrors errors;
    parser.RecordErrorsTo(&errors);
    return parser.ParseFromString(
        std::string(reinterpret_cast<const char*>(data), size), message);
  }
  return message->ParseFromArray(data, static_cast<int>(size));
}

// ---------------------------------------------------------------- limits --

// Small limits: every accepted request is cheap to execute (a few ms under
// ASan), whatever the input asks for.
inline server::RequestLimits Limits() {
  server::RequestLimits limits;
  limits.max_items_per_request = 4096;
  limits.max_items_per_stream = 16384;
  limits.max_message_bytes = int64_t{1} << 20;
  limits.max_enumerate_pairs = 1'000'000;
  // Small chunks, so that streams of a few thousand items have many.
  limits.target_chunk_bytes = int64_t{16} << 10;
  return limits;
}

inline constexpr uint64_t kServerSeed = 0x5eed5eed5eed5eedULL;
inline const server::SeedSource& Seeds() {
  static const auto* seeds = new server::SeedSource([] { return kServerSeed; });
  return *seeds;
}

// With SAMPLER_FUZZ_VERBOSE=1 in the environment, each input's fate is
// printed (for checking what a corpus exercises).
inline bool Verbose() {
  static const bool verbose = [] {
    const char* v = std::getenv("SAMPLER_FUZZ_VERBOSE");
    return v != nullptr && v[0] == '1';
  }();
  return verbose;
}
inline void Note(const std::string& what) {
  if (Verbose()) std::fprintf(stderr, "  fuzz: %s\n", what.c_str());
}

// A rejected request: only the two validation codes, always with a message
// (which starts with "request." for a streamed INVALID_ARGUMENT: the field
// path from the stream request).
inline void CheckRejection(const absl::Status& status, bool streamed) {
  Note(absl::StrCat("rejected: ", status.ToString()));
  FUZZ_CHECK(!status.ok());
  FUZZ_CHECK(status.code() == absl::StatusCode::kInvalidArgument ||
                 status.code() == absl::StatusCode::kOutOfRange,
             "rejected with ", status.ToString());
  FUZZ_CHECK(!status.message().empty(), status.ToString());
  if (streamed && status.code() == absl::StatusCode::kInvalidArgument) {
    FUZZ_CHECK(absl::StartsWith(status.message(), "request."),
               status.ToString());
  }
}

// A serialized response (or chunk) must fit the server's send limit.
template <typename Message>
void CheckFits(const Message& message) {
  const size_t bytes = message.ByteSizeLong();
  FUZZ_CHECK(bytes <= static_cast<size_t>(Limits().max_message_bytes), bytes,
             " bytes");
}

// --------------------------------------------------------------- backend --

// One CpuBackend for the life of the process: one worker thread, so that
// runs are deterministic and a whole batch costs one thread hand-off.
inline server::CpuBackend& Backend() {
  static server::CpuBackend* backend = [] {
    auto created = server::CpuBackend::Create(1, "fuzz");
    FUZZ_CHECK(created.ok(), created.status().ToString());
    return created->release();  // never destroyed: no join at exit
  }();
  return *backend;
}

// Runs the jobs as one batch and waits for its done callback, which must
// come exactly once, with OK (a CPU batch fails only as a whole when
// planning runs out of memory).
template <typename JobT>
void RunBatch(std::vector<std::shared_ptr<JobT>> jobs) {
  server::Batch<JobT> batch;
  for (const auto& job : jobs) batch.items += job->items;
  Note(absl::StrCat("accepted: ", jobs.size(), " job(s), ", batch.items,
                    " items"));
  batch.jobs = std::move(jobs);
  struct Waiter {
    std::mutex mu;
    std::condition_variable cv;
    int calls = 0;
    server::BatchResult result;
  };
  auto waiter = std::make_shared<Waiter>();
  Backend().Run(std::move(batch), [waiter](server::BatchResult result) {
    std::lock_guard<std::mutex> lock(waiter->mu);
    ++waiter->calls;
    waiter->result = std::move(result);
    waiter->cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(waiter->mu);
  waiter->cv.wait(lock, [&] { return waiter->calls > 0; });
  FUZZ_CHECK(waiter->calls == 1, waiter->calls, " done calls");
  FUZZ_CHECK(waiter->result.status.ok(), waiter->result.status.ToString());
  FUZZ_CHECK(waiter->result.device == "cpu", waiter->result.device);
}

// Runs `job` in one batch behind `twin`, the same request parsed again and
// bound to its own response: a job's answer must not depend on what else is
// in its batch (nor on its place there), so both must end alike.
template <typename JobT, typename Response>
void RunWithTwin(const std::shared_ptr<JobT>& job, const Response& response,
                 const std::shared_ptr<JobT>& twin,
                 const Response& twin_response) {
  FUZZ_CHECK(job != nullptr && twin != nullptr && job != twin);
  RunBatch<JobT>({twin, job});
  FUZZ_CHECK(job->status.code() == twin->status.code(), job->status.ToString(),
             " but its twin ", twin->status.ToString());
  if (job->status.ok()) {
    FUZZ_CHECK(
        response.SerializeAsString() == twin_response.SerializeAsString(),
        "the same request in one batch gave different answers");
  }
}

// ----------------------------------------------------------------- values --

// Same bits (NaNs compare by their bits too).
template <typename T>
bool SameBits(absl::Span<const T> a, absl::Span<const T> b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The first index where the bits differ, for messages.
template <typename T>
std::string FirstDifference(absl::Span<const T> a, absl::Span<const T> b) {
  if (a.size() != b.size()) {
    return absl::StrCat("sizes ", a.size(), " and ", b.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) {
      return absl::StrCat("first difference at [", i, "] of ", a.size(), ": ",
                          a[i], " vs ", b[i]);
    }
  }
  return "no difference";
}

template <typename T>
absl::Span<const T> Values(const v1::Reals& reals) {
  if constexpr (std::is_same_v<T, float>) {
    return absl::MakeConstSpan(reals.f32().values().data(),
                               reals.f32().values_size());
  } else {
    return absl::MakeConstSpan(reals.f64().values().data(),
                               reals.f64().values_size());
  }
}

}  // namespace sampler::fuzz

#endif  // SAMPLER_TESTS_FUZZ_FUZZ_TARGET_H_
