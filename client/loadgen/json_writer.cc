#include "client/loadgen/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/common/reals.h"

namespace sampler::client {

JsonObject::JsonObject(const JsonObject& other) { *this = other; }

JsonObject& JsonObject::operator=(const JsonObject& other) {
  if (this == &other) return *this;
  members_.clear();
  for (const Member& member : other.members_) {
    members_.push_back({member.key, member.scalar,
                        member.object
                            ? std::make_unique<JsonObject>(*member.object)
                            : nullptr});
  }
  return *this;
}

JsonObject& JsonObject::Number(absl::string_view key, double value) {
  std::string text;
  if (!std::isfinite(value)) {
    text = "null";
  } else if (value == std::trunc(value) && std::fabs(value) < 0x1p53) {
    text = absl::StrFormat("%.0f", value);
  } else {
    text = FormatReal(value, /*single_precision=*/false);
  }
  members_.push_back({std::string(key), std::move(text), nullptr});
  return *this;
}

JsonObject& JsonObject::String(absl::string_view key, absl::string_view value) {
  members_.push_back({std::string(key), JsonQuote(value), nullptr});
  return *this;
}

JsonObject& JsonObject::Null(absl::string_view key) {
  members_.push_back({std::string(key), "null", nullptr});
  return *this;
}

JsonObject& JsonObject::Object(absl::string_view key, JsonObject value) {
  members_.push_back(
      {std::string(key), "", std::make_unique<JsonObject>(std::move(value))});
  return *this;
}

std::string JsonObject::Render() const {
  std::string out;
  RenderTo(0, &out);
  return out;
}

void JsonObject::RenderTo(int indent, std::string* out) const {
  if (members_.empty()) {
    out->append("{}");
    return;
  }
  const std::string inner(indent + 2, ' ');
  out->append("{\n");
  for (size_t i = 0; i < members_.size(); ++i) {
    const Member& member = members_[i];
    absl::StrAppend(out, inner, JsonQuote(member.key), ": ");
    if (member.object) {
      member.object->RenderTo(indent + 2, out);
    } else {
      out->append(member.scalar);
    }
    out->append(i + 1 < members_.size() ? ",\n" : "\n");
  }
  absl::StrAppend(out, std::string(indent, ' '), "}");
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", c);
        } else {
          // Bytes >= 0x80 pass through: UTF-8 stays valid JSON.
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace sampler::client
