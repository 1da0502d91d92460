// Modelled on elixir-nx/nx exla/c_src/exla/custom_calls/runtime_callback_bridge.h (Apache-2.0); rewritten, not copied: see SOURCE.md.
// What a host callback hands to the Erlang side: its operands as views, the result buffers to fill,
// and a call that sends them to the callback server and waits for the answer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace exla::callback_bridge {

struct Arg {
  Arg() = default;
  explicit Arg(const xla::ffi::AnyBuffer& buffer);
  xla::ffi::DataType dtype;
  std::vector<int64_t> dims;
  const uint8_t* data = nullptr;
  size_t size_bytes = 0;
};

struct OutputBuffer {
  explicit OutputBuffer(const xla::ffi::AnyBuffer& buffer);
  uint8_t* data = nullptr;
  size_t size = 0;
};

struct Result {
  bool ok = true;
  std::string error;
};

// Sends the call to the Erlang process named by the pid operand and blocks until it has answered.
Result InvokeRuntimeCallback(xla::ffi::Span<const int64_t> callback_id_words, uint64_t callback_id_size,
                             const Arg& server_pid, const std::vector<Arg>& inputs,
                             const std::vector<OutputBuffer>& outputs);

}  // namespace exla::callback_bridge
