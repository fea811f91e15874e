#include "client/common/reals.h"

#include <algorithm>
#include <charconv>

namespace sampler::client {

int64_t RealsSize(const sampler::v1::Reals& reals) {
  switch (reals.values_case()) {
    case sampler::v1::Reals::kF32:
      return reals.f32().values_size();
    case sampler::v1::Reals::kF64:
      return reals.f64().values_size();
    default:
      return 0;
  }
}

void RealsToDoubles(const sampler::v1::Reals& reals, std::vector<double>* out) {
  out->clear();
  if (reals.has_f32()) {
    out->assign(reals.f32().values().begin(), reals.f32().values().end());
  } else if (reals.has_f64()) {
    out->assign(reals.f64().values().begin(), reals.f64().values().end());
  }
}

void RealsToDoubles(const sampler::v1::Reals& reals, int64_t begin,
                    int64_t count, std::vector<double>* out) {
  out->clear();
  const int64_t size = RealsSize(reals);
  begin = std::clamp<int64_t>(begin, 0, size);
  const int64_t end = begin + std::clamp<int64_t>(count, 0, size - begin);
  if (reals.has_f32()) {
    const auto& values = reals.f32().values();
    out->assign(values.begin() + begin, values.begin() + end);
  } else if (reals.has_f64()) {
    const auto& values = reals.f64().values();
    out->assign(values.begin() + begin, values.begin() + end);
  }
}

void SetReals(absl::Span<const double> values, sampler::v1::Precision precision,
              sampler::v1::Reals* reals) {
  if (precision == sampler::v1::PRECISION_FLOAT32) {
    auto* list = reals->mutable_f32()->mutable_values();
    list->Clear();
    list->Reserve(values.size());
    for (double value : values) list->Add(static_cast<float>(value));
  } else {
    auto* list = reals->mutable_f64()->mutable_values();
    list->Clear();
    list->Reserve(values.size());
    for (double value : values) list->Add(value);
  }
}

void AppendReals(const sampler::v1::Reals& chunk, sampler::v1::Reals* total) {
  if (RealsSize(chunk) == 0) return;
  if (total->values_case() == sampler::v1::Reals::VALUES_NOT_SET) {
    if (chunk.has_f32()) {
      total->mutable_f32();
    } else {
      total->mutable_f64();
    }
  }
  if (total->has_f32()) {
    auto* values = total->mutable_f32()->mutable_values();
    if (chunk.has_f32()) {
      values->MergeFrom(chunk.f32().values());
    } else {
      for (double value : chunk.f64().values()) {
        values->Add(static_cast<float>(value));
      }
    }
  } else {
    auto* values = total->mutable_f64()->mutable_values();
    if (chunk.has_f64()) {
      values->MergeFrom(chunk.f64().values());
    } else {
      for (float value : chunk.f32().values()) values->Add(value);
    }
  }
}

std::string FormatReal(double value, bool single_precision) {
  char buffer[64];
  const std::to_chars_result result =
      single_precision ? std::to_chars(buffer, buffer + sizeof(buffer),
                                       static_cast<float>(value))
                       : std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

}  // namespace sampler::client
