// A small JSON object builder whose keys come out in the order they were
// added, for reports that are committed and diffed (protobuf's JSON printer
// writes a Struct's keys in hash order). Pure.
#ifndef SAMPLER_CLIENT_LOADGEN_JSON_WRITER_H_
#define SAMPLER_CLIENT_LOADGEN_JSON_WRITER_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace sampler::client {

class JsonObject {
 public:
  JsonObject() = default;
  JsonObject(const JsonObject& other);
  JsonObject& operator=(const JsonObject& other);
  JsonObject(JsonObject&&) = default;
  JsonObject& operator=(JsonObject&&) = default;
  ~JsonObject() = default;

  // Integral values within 2^53 print without a fraction; NaN and
  // infinities, which JSON lacks, print as null.
  JsonObject& Number(absl::string_view key, double value);
  JsonObject& String(absl::string_view key, absl::string_view value);
  JsonObject& Null(absl::string_view key);
  JsonObject& Object(absl::string_view key, JsonObject value);

  // Two-space indentation, one member per line, no trailing newline.
  std::string Render() const;

 private:
  struct Member {
    std::string key;
    // The rendered value, or the nested object when `object` is set.
    std::string scalar;
    std::unique_ptr<JsonObject> object;
  };
  void RenderTo(int indent, std::string* out) const;

  std::vector<Member> members_;
};

// `text` as a JSON string literal, quotes included.
std::string JsonQuote(absl::string_view text);

}  // namespace sampler::client

#endif  // SAMPLER_CLIENT_LOADGEN_JSON_WRITER_H_
