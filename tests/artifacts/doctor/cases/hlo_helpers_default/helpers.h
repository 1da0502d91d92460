#pragma once
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

template <typename T>
std::string PackDescriptorAsString(const T& descriptor) {
  return std::string(reinterpret_cast<const char*>(&descriptor), sizeof(T));
}

template <typename T>
const T* UnpackDescriptor(const char* opaque, std::size_t opaque_len) {
  if (opaque_len != sizeof(T)) throw std::runtime_error("descriptor of the wrong size");
  return reinterpret_cast<const T*>(opaque);
}
