// ATen/Dispatch.h: xlacc's stand-in (see xlacc_torch_compat.h): a launcher including it compiles over XLA's buffers.
#pragma once
#include <xlacc_torch_compat.h>
