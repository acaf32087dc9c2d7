// Error-propagation helpers for setup code. The installed abseil (20220623) has no RETURN_IF_ERROR,
// so the project defines one pair here, once.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define BS_STATUS_CONCAT_INNER_(a, b) a##b
#define BS_STATUS_CONCAT_(a, b) BS_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define BS_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status bs_status_ = (expr);      \
    if (!bs_status_.ok()) return bs_status_; \
  } while (0)

// `lhs = value of expr` for an absl::StatusOr<T>, returning its status on error.
// NOLINTBEGIN(bugprone-macro-parentheses): lhs is a declaration ("T x"), which parentheses would break.
#define BS_ASSIGN_OR_RETURN(lhs, expr) BS_ASSIGN_OR_RETURN_IMPL_(BS_STATUS_CONCAT_(bs_statusor_, __LINE__), lhs, expr)
#define BS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)

namespace burstscope {

// strerror's text for a C error number, safe on any thread (strerror itself may share its buffer).
inline std::string errnoText(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // the GNU variant: returns the text, in buf or static
}

// Converts a C error number once, keeping what was being done: "open trace.pcap: No such file".
inline absl::Status errnoStatus(int err, absl::string_view what) {
  return absl::Status(absl::ErrnoToStatusCode(err), absl::StrCat(what, ": ", errnoText(err)));
}

}  // namespace burstscope
