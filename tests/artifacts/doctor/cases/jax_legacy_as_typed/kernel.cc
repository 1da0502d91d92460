// An XLA:CPU legacy entry point (api_version 2: out, in, status).
#include <cstddef>

struct XlaCustomCallStatus_;
typedef struct XlaCustomCallStatus_ XlaCustomCallStatus;

extern "C" void add_f32x4(void* out, const void** in, XlaCustomCallStatus* status) {
  const float* a = static_cast<const float*>(in[0]);
  const float* b = static_cast<const float*>(in[1]);
  float* o = static_cast<float*>(out);
  for (int i = 0; i < 4; ++i) o[i] = a[i] + b[i];
}
