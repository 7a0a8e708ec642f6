// What a person (or a script, with --json) reads about a run: the one-line progress during `run`, the
// status summary, and the closing result. All of it is rendered from the folded state alone.
// Uses: run, resume and status commands.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "run/state.h"

namespace longhaul {

std::string progress_line(const RunState& s);
std::string status_text(const RunState& s, const std::string& run_dir, bool running);
nlohmann::json status_json(const RunState& s, const std::string& run_dir, bool running);
// "12.3 ms" with the goal's unit.
std::string format_metric(const RunState& s, double value);
std::string format_params(const nlohmann::json& params);

}  // namespace longhaul
