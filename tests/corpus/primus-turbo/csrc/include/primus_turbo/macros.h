// Modelled on AMD-AGI/Primus-Turbo csrc/include/primus_turbo/macros.h (MIT); rewritten, not copied: see SOURCE.md.
// The project's error macros: every failed check becomes a std::runtime_error naming file and line.
#pragma once

#include <hip/hip_runtime.h>

#include <stdexcept>
#include <string>

namespace primus_turbo {

template <typename... Parts>
inline std::string join_message(const Parts&... parts) {
  std::string text;
  ((text += std::string(parts)), ...);
  return text;
}

}  // namespace primus_turbo

#define PRIMUS_TURBO_ERROR(...)                                                                          \
  do {                                                                                                   \
    throw ::std::runtime_error(::primus_turbo::join_message(__FILE__, ": ", __func__, ": ", __VA_ARGS__)); \
  } while (false)

#define PRIMUS_TURBO_CHECK(expr, ...)                                     \
  do {                                                                    \
    if (!(expr)) {                                                        \
      PRIMUS_TURBO_ERROR("check failed: " #expr " ", ##__VA_ARGS__);      \
    }                                                                     \
  } while (false)

#define PRIMUS_TURBO_CHECK_HIP(expr)                                      \
  do {                                                                    \
    const hipError_t status_ = (expr);                                    \
    if (status_ != hipSuccess) {                                          \
      PRIMUS_TURBO_ERROR("HIP call failed: ", hipGetErrorString(status_)); \
    }                                                                     \
  } while (false)
