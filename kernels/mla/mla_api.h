// mla/mla_api.h: what every backend of the C API (mla.h) shares, in C++: parameter validation, the
// thread's last-error detail, and bf16 <-> float conversion on the host (common/bf16.h).
//
// Uses: mla_cpu.cc (the CPU backend); mla_cuda.cu (the same checks before a launch); tests;
// gpu_check.cu.
#pragma once

#include <cstdint>
#include <string>

#include "common/bf16.h"
#include "mla/mla.h"

namespace longhaul::mla {

// Records detail as this thread's mla_last_error() and returns s.
mla_status SetError(mla_status s, const std::string& detail);
void ClearError();

// "" if p is well-formed for any backend, else a sentence. seqlens_host, when not null, is a host
// copy of the B sequence lengths to check against the cache's capacity.
std::string CheckParams(const mla_fwd_params& p, const int32_t* seqlens_host);

using kernels::Bf16ToFloat;
using kernels::FloatToBf16;

}  // namespace longhaul::mla
