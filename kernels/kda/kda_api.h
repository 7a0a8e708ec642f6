// kda/kda_api.h: what every backend of the C API (kda.h) shares, in C++: parameter validation, the
// thread's last-error detail, and bf16 <-> float conversion on the host (common/bf16.h).
//
// Uses: kda_cpu.cc (the CPU backend); the CUDA backend's launcher (the same checks before a launch);
// tests.
#pragma once

#include <cstdint>
#include <string>

#include "common/bf16.h"
#include "kda/kda.h"

namespace longhaul::kda {

// Records detail as this thread's kda_last_error() and returns s.
kda_status SetError(kda_status s, const std::string& detail);
void ClearError();

// "" if p is well-formed for any backend, else a sentence. host_cu, when not null, is a host copy of
// cu_seqlens to check (N+1 offsets); the CPU backend passes p.cu_seqlens itself.
std::string CheckParams(const kda_fwd_params& p, const int64_t* host_cu);

using kernels::Bf16ToFloat;
using kernels::FloatToBf16;

}  // namespace longhaul::kda
