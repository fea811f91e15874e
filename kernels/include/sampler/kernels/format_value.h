// The text of a real number in error messages: the shortest text that reads
// back as the same value, so that a message shows exactly what was refused
// (six significant digits can make a value out of range for float32 look
// like one in range, or a subnormal look normal). Host code only.
#ifndef SAMPLER_KERNELS_FORMAT_VALUE_H_
#define SAMPLER_KERNELS_FORMAT_VALUE_H_

#include <charconv>
#include <string>

namespace sampler::kernels {

template <typename T>
std::string FormatValue(T x) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

}  // namespace sampler::kernels

#endif  // SAMPLER_KERNELS_FORMAT_VALUE_H_
