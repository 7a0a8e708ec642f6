// The rules stage of the cascade, the cheapest after dedup: a candidate may only hold editable files,
// may not touch the harness, and may not contain a forbidden pattern. Uses: the cascade; the LLM
// proposer's tools check paths with plain_path() and editable_path() before reading or writing.
#pragma once
#include <optional>
#include <string>

#include "eval/candidate.h"
#include "task/task.h"

namespace longhaul {

// nullopt when the candidate obeys every rule; otherwise the first violation, e.g.
// "gemm.cc:12: forbidden pattern 'cblas_\w+' (no external BLAS)".
std::optional<std::string> check_rules(const Task& task, const Candidate& candidate);

// Whether `path` is a plain relative path, one that cannot leave the folder it is taken in: not empty,
// no leading '/', no "." or ".." or empty part, no backslash or NUL.
bool plain_path(const std::string& path);

// Whether `path` is a plain relative path inside the task that the editable globs allow.
bool editable_path(const Task& task, const std::string& path);

}  // namespace longhaul
