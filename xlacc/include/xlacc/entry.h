// xlacc/entry.h: what the entry points xlacc generates share (not for kernel files): the dtype
// check and dispatch helpers, and for legacy entry points the backend_config parser and failure
// reporting. Shipped with xlacc; `xlacc build` puts it on the include path.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>

#include "xlacc/kernel.h"

// Entry points are the only symbols a library exports (xlacc builds with -fvisibility=hidden).
#define XLACC_EXPORT __attribute__((visibility("default")))

namespace xlacc {

// A tensor and the dtype the op's signature gives it once T is known.
struct Expect {
  const char* name;
  const Tensor* tensor;
  DType dtype;
};

inline Status check_dtypes(const char* op, std::initializer_list<Expect> expected) {
  for (const Expect& e : expected) {
    if (e.tensor->dtype != e.dtype) {
      return Status::Invalid(std::string(op) + ": " + e.name + " must be " + dtype_name(e.dtype) + ", got " + dtype_name(e.tensor->dtype));
    }
  }
  return Status::Ok();
}

inline Status unsupported_dtype(const char* op, DType d, const char* supported) {
  return Status::Invalid(std::string(op) + ": element type " + dtype_name(d) + " is not one of " + supported);
}

inline DType dtype_from_name(const std::string& s) {
  for (DType d : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::S32, DType::S64}) {
    if (s == dtype_name(d)) return d;
  }
  return DType::Unknown;
}

// ---- legacy entry points (api_version 1-3): sizes travel in backend_config --------------------

// backend_config of a legacy call: `key=value` pairs separated by ';', for example
// `x.shape=8,4096;eps=1e-06;dtype=bf16`. The sizes travel here, never in a constant.
class Config {
 public:
  Config(const char* text, size_t len) : text_(text ? std::string(text, len) : std::string()) {}

  bool find(const std::string& key, std::string* value) const {
    size_t start = 0;
    while (start <= text_.size()) {
      size_t end = text_.find(';', start);
      if (end == std::string::npos) end = text_.size();
      size_t eq = text_.find('=', start);
      if (eq != std::string::npos && eq < end && eq - start == key.size() && text_.compare(start, eq - start, key) == 0) {
        *value = text_.substr(eq + 1, end - eq - 1);
        return true;
      }
      start = end + 1;
    }
    return false;
  }

  Status shape(const std::string& name, Tensor* t) const {
    std::string value;
    if (!find(name + ".shape", &value)) return missing(name + ".shape");
    t->rank = 0;
    const char* p = value.c_str();
    while (*p) {
      if (t->rank == Tensor::kMaxRank) return Status::Invalid(name + ".shape has more than 8 dims");
      char* end = nullptr;
      long long d = std::strtoll(p, &end, 10);
      if (end == p || d < 0 || (*end != ',' && *end != '\0')) return Status::Invalid("bad " + name + ".shape in backend_config: '" + value + "'");
      t->dims[t->rank++] = d;
      p = (*end == ',') ? end + 1 : end;
    }
    return Status::Ok();
  }

  Status number(const std::string& key, double* out) const {
    std::string value;
    if (!find(key, &value)) return missing(key);
    char* end = nullptr;
    *out = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0') return Status::Invalid("bad " + key + " in backend_config: '" + value + "'");
    return Status::Ok();
  }

  Status dtype(DType fallback, DType* out) const {
    std::string value;
    *out = find("dtype", &value) ? dtype_from_name(value) : fallback;
    if (*out == DType::Unknown) return Status::Invalid("bad dtype in backend_config: '" + value + "'");
    return Status::Ok();
  }

 private:
  Status missing(const std::string& key) const {
    return Status::Invalid("backend_config lacks '" + key + "' (got '" + text_ + "'): call through the generated Python module, which sets it");
  }
  std::string text_;
};

// An operand or result of a legacy call: its name in backend_config, and its dtype (the op's
// element type when generic).
struct Operand {
  const char* name;
  bool generic;
  DType dtype;
};

// Pointers and shapes of a legacy call's buffers, in the order of `operands`.
inline Status legacy_tensors(const Config& config, DType op_dtype, std::initializer_list<Operand> operands, void* const* ptrs, Tensor* tensors) {
  int i = 0;
  for (const Operand& o : operands) {
    tensors[i].ptr = ptrs[i];
    tensors[i].dtype = o.generic ? op_dtype : o.dtype;
    Status status = config.shape(o.name, &tensors[i]);
    if (!status.ok()) return status;
    ++i;
  }
  return Status::Ok();
}

// The last failure of a library's legacy entry point. Under JAX XlaCustomCallStatusSetFailure is
// unreachable, so the Python module reads failures from here (`last_error()`).
class LastError {
 public:
  void set(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    message_ = message;
  }
  const char* get() {
    static thread_local std::string copy;
    std::lock_guard<std::mutex> lock(mutex_);
    if (message_.empty()) return nullptr;
    copy = message_;
    return copy.c_str();
  }

 private:
  std::mutex mutex_;
  std::string message_;
};

}  // namespace xlacc

// XLA's C API for reporting failure from a legacy call. Declared weak: where XLA does not export
// it (JAX loads its runtime privately), it is NULL and the library still loads.
struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;
extern "C" void XlaCustomCallStatusSetFailure(XlaCustomCallStatus* status, const char* message, size_t message_len) __attribute__((weak));

namespace xlacc {

inline void fail(XlaCustomCallStatus* status, LastError& last, const char* target, const std::string& message) {
  last.set(message);
  if (XlaCustomCallStatusSetFailure != nullptr) {
    XlaCustomCallStatusSetFailure(status, message.data(), message.size());
  } else {
    // XLA will treat the call as a success: make the failure visible.
    std::fprintf(stderr, "xlacc: %s failed: %s (XlaCustomCallStatusSetFailure is not available in this process, so XLA saw success; the outputs are not valid)\n", target, message.c_str());
    std::fflush(stderr);
  }
}

}  // namespace xlacc
