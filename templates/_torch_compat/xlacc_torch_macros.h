// xlacc_torch_macros.h: PyTorch's checking, dispatch and registration macros over xlacc's tensor
// views (included by xlacc_torch_compat.h, which a launcher reaches through torch/all.h & co.).
#pragma once

#include "xlacc_torch_compat.h"

// ---- checks: an error the call returns to XLA ------------------------------------------------------
// As PyTorch's: a braced if, so that a call written without its ';' compiles too.
#define TORCH_CHECK(cond, ...)                                                      \
  if (!(cond)) {                                                                    \
    ::xlacc::torch_compat::check_failed(#cond, __FILE__, __LINE__, ##__VA_ARGS__); \
  }
#define TORCH_CHECK_VALUE(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_CHECK_TYPE(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_CHECK_NOT_IMPLEMENTED(cond, ...) TORCH_CHECK(cond, ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) TORCH_CHECK(cond, "internal assert failed: " #cond " ", ##__VA_ARGS__)
#define TORCH_INTERNAL_ASSERT_DEBUG_ONLY(...) ((void)0)
#define XLACC_TORCH_CHECK_OP(a, b, op) TORCH_CHECK((a)op(b), "Check failed: " #a " " #op " " #b " (", (a), " vs. ", (b), ")")
#define TORCH_CHECK_EQ(a, b) XLACC_TORCH_CHECK_OP(a, b, ==)
#define TORCH_CHECK_NE(a, b) XLACC_TORCH_CHECK_OP(a, b, !=)
#define TORCH_CHECK_LE(a, b) XLACC_TORCH_CHECK_OP(a, b, <=)
#define TORCH_CHECK_LT(a, b) XLACC_TORCH_CHECK_OP(a, b, <)
#define TORCH_CHECK_GE(a, b) XLACC_TORCH_CHECK_OP(a, b, >=)
#define TORCH_CHECK_GT(a, b) XLACC_TORCH_CHECK_OP(a, b, >)
#define AT_ERROR(...) ::xlacc::torch_compat::check_failed("false", __FILE__, __LINE__, ##__VA_ARGS__)
#define AT_ASSERT(cond, ...) TORCH_INTERNAL_ASSERT(cond, ##__VA_ARGS__)
#define TORCH_WARN(...) ((void)0)
#define TORCH_WARN_ONCE(...) ((void)0)

#ifdef __CUDACC__
#define C10_CUDA_CHECK(expr)                                                                             \
  do {                                                                                                   \
    const cudaError_t xlacc_err = (expr);                                                                \
    TORCH_CHECK(xlacc_err == cudaSuccess, "CUDA error: ", cudaGetErrorString(xlacc_err), " in ", #expr); \
  } while (0)
#define C10_CUDA_KERNEL_LAUNCH_CHECK() C10_CUDA_CHECK(cudaGetLastError())
#define AT_CUDA_CHECK(expr) C10_CUDA_CHECK(expr)
#endif

// ---- AT_DISPATCH: run the lambda with scalar_t the tensor's C++ type -----------------------------------
#define AT_DISPATCH_CASE(ENUM, ...)                 \
  case ENUM: {                                      \
    using scalar_t [[maybe_unused]] = ::c10::cpp_type_t<ENUM>; \
    return __VA_ARGS__();                           \
  }
#define AT_DISPATCH_SWITCH(TYPE, NAME, ...)                                                                              \
  [&] {                                                                                                                  \
    const ::c10::ScalarType xlacc_dispatch_type = ::at::detail::scalar_type(TYPE);                                       \
    switch (xlacc_dispatch_type) {                                                                                       \
      __VA_ARGS__                                                                                                        \
      default:                                                                                                           \
        throw ::xlacc::torch_compat::Error(                                                                              \
            ::xlacc::torch_compat::concat('"', NAME, "\" not implemented for '", ::c10::toString(xlacc_dispatch_type), "'")); \
    }                                                                                                                    \
  }()
#define AT_DISPATCH_CASE_FLOATING_TYPES(...) \
  AT_DISPATCH_CASE(::c10::ScalarType::Double, __VA_ARGS__) AT_DISPATCH_CASE(::c10::ScalarType::Float, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(::c10::ScalarType::Half, __VA_ARGS__)
#define AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(...) \
  AT_DISPATCH_CASE(::c10::ScalarType::Half, __VA_ARGS__) AT_DISPATCH_CASE(::c10::ScalarType::BFloat16, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND(T1, ...) AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND2(T1, T2, ...) \
  AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) AT_DISPATCH_CASE(T2, __VA_ARGS__)
#define AT_DISPATCH_CASE_FLOATING_TYPES_AND3(T1, T2, T3, ...) \
  AT_DISPATCH_CASE_FLOATING_TYPES_AND2(T1, T2, __VA_ARGS__) AT_DISPATCH_CASE(T3, __VA_ARGS__)
#define AT_DISPATCH_CASE_INTEGRAL_TYPES(...)                                                                        \
  AT_DISPATCH_CASE(::c10::ScalarType::Byte, __VA_ARGS__) AT_DISPATCH_CASE(::c10::ScalarType::Char, __VA_ARGS__)     \
  AT_DISPATCH_CASE(::c10::ScalarType::Int, __VA_ARGS__) AT_DISPATCH_CASE(::c10::ScalarType::Long, __VA_ARGS__)      \
  AT_DISPATCH_CASE(::c10::ScalarType::Short, __VA_ARGS__)
#define AT_DISPATCH_CASE_ALL_TYPES(...) AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__)

#define AT_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND_HALF(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND_HALF(__VA_ARGS__))
#define AT_DISPATCH_REDUCED_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_REDUCED_FLOATING_TYPES(__VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND(T1, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND(T1, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND2(T1, T2, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND2(T1, T2, __VA_ARGS__))
#define AT_DISPATCH_FLOATING_TYPES_AND3(T1, T2, T3, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_FLOATING_TYPES_AND3(T1, T2, T3, __VA_ARGS__))
#define AT_DISPATCH_INTEGRAL_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_INTEGRAL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES(TYPE, NAME, ...) AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__))
#define AT_DISPATCH_ALL_TYPES_AND2(T1, T2, TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, AT_DISPATCH_CASE_ALL_TYPES(__VA_ARGS__) AT_DISPATCH_CASE(T1, __VA_ARGS__) AT_DISPATCH_CASE(T2, __VA_ARGS__))

// ---- registration: the op is registered with XLA, not with torch or Python ---------------------------------
#define XLACC_TORCH_CAT2(a, b) a##b
#define XLACC_TORCH_CAT(a, b) XLACC_TORCH_CAT2(a, b)
namespace xlacc {
namespace torch_compat {
struct NoRegistry {  // PYBIND11_MODULE's `m` and TORCH_LIBRARY's: what they register is not used
  template <typename... Any> NoRegistry& def(Any&&...) { return *this; }
  template <typename... Any> NoRegistry& impl(Any&&...) { return *this; }
};
}  // namespace torch_compat
}  // namespace xlacc
#define PYBIND11_MODULE(name, m) [[maybe_unused]] static void XLACC_TORCH_CAT(xlacc_unused_module_, __LINE__)(::xlacc::torch_compat::NoRegistry & m)
#define TORCH_LIBRARY(ns, m) [[maybe_unused]] static void XLACC_TORCH_CAT(xlacc_unused_library_, __LINE__)(::xlacc::torch_compat::NoRegistry & m)
#define TORCH_LIBRARY_FRAGMENT(ns, m) TORCH_LIBRARY(ns, m)
#define TORCH_LIBRARY_IMPL(ns, k, m) TORCH_LIBRARY(ns, m)
#define TORCH_EXTENSION_NAME xlacc_torch_extension

