// Modelled on pytorch/xla torch_xla/csrc/xla_custom_call.h (BSD-3-Clause); rewritten, not copied:
// see SOURCE.md. Static registration inside torch_xla's own binary, which links XLA's registry.
#ifndef XLA_TORCH_XLA_CSRC_XLA_CUSTOM_CALL_H_
#define XLA_TORCH_XLA_CSRC_XLA_CUSTOM_CALL_H_

#include "xla/service/custom_call_target_registry.h"

void argmin_custom(void* out, const void** in);
XLA_REGISTER_CUSTOM_CALL_TARGET(argmin_custom, "Host");

#endif  // XLA_TORCH_XLA_CSRC_XLA_CUSTOM_CALL_H_
