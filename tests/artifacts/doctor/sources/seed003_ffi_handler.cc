// From the user's note 003: a typed FFI handler registered by a static initializer in the library.
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

static ffi::Error SimpleAddImpl(cudaStream_t stream, ffi::Buffer<ffi::DataType::F32> a,
                                ffi::Buffer<ffi::DataType::F32> b, ffi::ResultBuffer<ffi::DataType::F32> out);

XLA_FFI_DEFINE_HANDLER(
    SimpleAddHandler,
    SimpleAddImpl,
    ffi::Ffi::Bind()
        .Ctx<ffi::PlatformStream<cudaStream_t>>()
        .Arg<ffi::Buffer<ffi::DataType::F32>>()  // input a
        .Arg<ffi::Buffer<ffi::DataType::F32>>()  // input b
        .Ret<ffi::Buffer<ffi::DataType::F32>>()  // output
);

XLA_FFI_REGISTER_HANDLER(
    "XlaGpuSimpleAdd",  // 必须匹配 target_name
    "CUDA",             // 平台
    SimpleAddHandler
);
