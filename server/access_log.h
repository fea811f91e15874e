// The optional access log (--access_log): one line per finished call of
// sampler.v1.SamplerService, for operators who want to see who asked for
// what (issue 9 item 8). Never tokens, never request contents:
//
//   2026-11-23T19:01:02.123456Z method=SampleGamma peer=ipv4:127.0.0.1:51234
//       code=OK items=256 latency_s=0.000412
//
// (one line; wrapped here). Lines are written whole under a mutex, so
// concurrent calls never interleave within a line.
#ifndef SAMPLER_SERVER_ACCESS_LOG_H_
#define SAMPLER_SERVER_ACCESS_LOG_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sampler::server {

class AccessLog {
 public:
  // "-" is standard error; any other path is opened for appending (created
  // if missing). An unwritable path is an error naming it.
  static absl::StatusOr<std::unique_ptr<AccessLog>> Open(
      const std::string& path);
  ~AccessLog();

  AccessLog(const AccessLog&) = delete;
  AccessLog& operator=(const AccessLog&) = delete;

  // One line; `peer` as gRPC names it (ipv4:host:port, ...).
  void Write(absl::string_view method, absl::string_view peer,
             absl::string_view code, int64_t items, double seconds);

 private:
  AccessLog(std::FILE* file, bool owned) : file_(file), owned_(owned) {}

  std::mutex mu_;
  std::FILE* const file_;
  const bool owned_;
};

}  // namespace sampler::server

#endif  // SAMPLER_SERVER_ACCESS_LOG_H_
