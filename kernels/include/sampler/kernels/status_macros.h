// Error propagation for absl::Status and absl::StatusOr, written once.
//
//   SAMPLER_RETURN_IF_ERROR(ValidateShape(shape));
//   SAMPLER_ASSIGN_OR_RETURN(auto job, ParseGamma(request, limits, seeds));
//   SAMPLER_ASSIGN_OR_RETURN(int64_t n, CountItems(request));
//
// The first returns the status when it is not OK; the second evaluates a
// StatusOr once, returns its status when it is not OK, and otherwise moves
// its value into the declaration or lvalue on the left. Both work in
// functions returning absl::Status or any absl::StatusOr<T>.
#ifndef SAMPLER_KERNELS_STATUS_MACROS_H_
#define SAMPLER_KERNELS_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SAMPLER_RETURN_IF_ERROR(expr)                                     \
  do {                                                                    \
    if (::absl::Status sampler_status_ = (expr); !sampler_status_.ok()) { \
      return sampler_status_;                                             \
    }                                                                     \
  } while (false)

#define SAMPLER_STATUS_CONCAT_INNER_(a, b) a##b
#define SAMPLER_STATUS_CONCAT_(a, b) SAMPLER_STATUS_CONCAT_INNER_(a, b)

#define SAMPLER_ASSIGN_OR_RETURN(lhs, expr) \
  SAMPLER_ASSIGN_OR_RETURN_IMPL_(           \
      SAMPLER_STATUS_CONCAT_(sampler_statusor_, __LINE__), lhs, expr)

#define SAMPLER_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return std::move(tmp).status();       \
  lhs = *std::move(tmp)

#endif  // SAMPLER_KERNELS_STATUS_MACROS_H_
