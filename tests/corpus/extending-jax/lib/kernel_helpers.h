// Modelled on dfm/extending-jax lib/kernel_helpers.h (MIT); rewritten, not copied: see SOURCE.md.
#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

namespace kepler_jax {

template <typename T>
std::string PackDescriptorAsString(const T& descriptor) {
  return std::string(reinterpret_cast<const char*>(&descriptor), sizeof(T));
}

template <typename T>
const T* UnpackDescriptor(const char* opaque, std::size_t opaque_len) {
  if (opaque_len != sizeof(T)) {
    throw std::runtime_error("Invalid opaque object size");
  }
  return reinterpret_cast<const T*>(opaque);
}

}  // namespace kepler_jax
