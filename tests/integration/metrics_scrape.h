// Reading a server's /metrics over plain HTTP, as Prometheus would, and
// looking up series in the text exposition format. Loopback only; every
// socket operation has a timeout.
#ifndef SAMPLER_TESTS_INTEGRATION_METRICS_SCRAPE_H_
#define SAMPLER_TESTS_INTEGRATION_METRICS_SCRAPE_H_

#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace sampler::testing {

// GET http://127.0.0.1:port/path (HTTP/1.0, so the server closes the
// connection after the body). The body of a 200 answer; an error for any
// other status, a refused connection or a timeout.
absl::StatusOr<std::string> HttpGet(int port, absl::string_view path,
                                    absl::Duration timeout = absl::Seconds(5));

// True when a TCP connection to 127.0.0.1:port is refused (nothing listens),
// false when it is accepted (or fails otherwise).
bool ConnectionRefused(int port);

// One scrape in the text format: each sample line's series (name and
// labels, exactly as written, e.g. `sampler_items_total{method="SampleGamma"}`)
// and value, and the families declared by "# TYPE" lines.
class MetricsText {
 public:
  explicit MetricsText(absl::string_view text);

  // The value of `series`, or nullopt when there is no such sample line.
  std::optional<double> Value(absl::string_view series) const;
  // The value, or 0 when absent (counters that have not been touched yet).
  double ValueOr0(absl::string_view series) const;
  bool HasFamily(absl::string_view name) const;
  // The declared type of a family ("counter", "histogram", ...) or "".
  std::string FamilyType(absl::string_view name) const;

 private:
  std::map<std::string, double, std::less<>> samples_;
  std::map<std::string, std::string, std::less<>> families_;
};

}  // namespace sampler::testing

#endif  // SAMPLER_TESTS_INTEGRATION_METRICS_SCRAPE_H_
