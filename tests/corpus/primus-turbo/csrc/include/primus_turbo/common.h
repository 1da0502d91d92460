// Modelled on AMD-AGI/Primus-Turbo csrc/include/primus_turbo/common.h (MIT); rewritten, not copied: see SOURCE.md.
#pragma once

#include <hip/hip_runtime.h>

#include <cstdint>
#include <stdexcept>

#include "primus_turbo/dtype.h"
#include "primus_turbo/macros.h"
