// xlacc/ffi.h: what the typed FFI handlers xlacc generates share: XLA's buffers as xlacc::Tensor
// and xlacc::Status as an FFI error. Shipped with xlacc; needs XLA's FFI headers (from jaxlib).
#pragma once

#include <initializer_list>

#include "xla/ffi/api/ffi.h"
#include "xlacc/entry.h"

namespace xlacc {

inline DType from_ffi(xla::ffi::DataType d) {
  switch (d) {
    case xla::ffi::DataType::F16: return DType::F16;
    case xla::ffi::DataType::BF16: return DType::BF16;
    case xla::ffi::DataType::F32: return DType::F32;
    case xla::ffi::DataType::F64: return DType::F64;
    case xla::ffi::DataType::S32: return DType::S32;
    case xla::ffi::DataType::S64: return DType::S64;
    default: return DType::Unknown;
  }
}

// The buffers XLA passed, in order, as Tensors; refuses ranks above Tensor::kMaxRank.
inline Status ffi_tensors(const char* op, std::initializer_list<const xla::ffi::AnyBuffer*> buffers, Tensor* tensors) {
  for (const xla::ffi::AnyBuffer* b : buffers) {
    auto dims = b->dimensions();
    if (dims.size() > static_cast<size_t>(Tensor::kMaxRank)) {
      return Status::Invalid(std::string(op) + ": tensors of more than 8 dims are not supported");
    }
    Tensor& t = *tensors++;
    t.ptr = b->untyped_data();
    t.dtype = from_ffi(b->element_type());
    t.rank = static_cast<int>(dims.size());
    for (int i = 0; i < t.rank; ++i) t.dims[i] = dims[i];
  }
  return Status::Ok();
}

inline xla::ffi::Error ffi_error(const Status& status) {
  if (status.ok()) return xla::ffi::Error::Success();
  return status.invalid_argument ? xla::ffi::Error::InvalidArgument(status.message) : xla::ffi::Error::Internal(status.message);
}

}  // namespace xlacc
