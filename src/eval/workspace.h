// A workspace: a fresh copy of the task folder with a candidate's files and generated parameter header
// applied, in which the steps run. Uses: the cascade, and re-measurement of close calls.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include "eval/candidate.h"
#include "task/task.h"
#include "util/result.h"

namespace longhaul {

// Copies the task (hidden entries and `skip`, e.g. a run folder inside the task, left out) into `dir`,
// which must not exist, then writes the candidate's files and the parameter header.
Status make_workspace(const Task& task, const Candidate& candidate, const std::filesystem::path& dir,
                      const std::filesystem::path& skip = {});

// "#define NAME VALUE" per parameter, in the order of the task's parameter space.
std::string params_header(const Task& task, const nlohmann::json& params);

// The environment every step gets on top of the inherited one: the step's own env, LONGHAUL_SEED,
// LONGHAUL_STEP and, when the space asks for it, LONGHAUL_PARAM_<NAME>.
std::map<std::string, std::string> step_env(const Task& task, const Step& step,
                                            const nlohmann::json& params, uint64_t seed);

}  // namespace longhaul
