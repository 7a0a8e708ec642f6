// The built-in search proposer, driving a run one evaluated point at a time. Uses: make_proposer.
#pragma once
#include <memory>

#include "run/lab.h"

namespace longhaul {

Result<std::unique_ptr<Proposer>> make_search_driver(const RunState& state, const Task& task);

}  // namespace longhaul
