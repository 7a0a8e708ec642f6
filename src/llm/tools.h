// The tools the LLM proposer offers the model, and what each does. All but evaluate and record_lesson
// are functions of the folded log (the working copy, the ledger, the task's files), so running one
// again after a crash gives the same result. Writes reach only editable files (editable_path); paths
// cannot leave the task. A tool that cannot run as asked (bad arguments, an unknown name, a search
// text that matches nothing or more than once) returns an error the model sees, never a crash.
// Uses: the agent.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/context.h"
#include "run/lab.h"

namespace longhaul::llm {

std::vector<ToolDef> tool_defs();

struct ToolOutput {
  bool ok = false;
  std::string text;                                 // what the model reads
  nlohmann::json files = nlohmann::json::object();  // working-copy changes {path: blob}
  bool replace = false;                             // files is the whole new working copy (revert)
};

struct ToolEnv {
  Lab& lab;
  const Transcript& transcript;
  const AgentConfig& config;
  Blobs& blobs;
};

// Runs one call (logged as tool_call with seq `call_seq`). For evaluate, an attempt already made for
// this call (a resumed run) is reported from the ledger instead of being evaluated again.
ToolOutput run_tool(ToolEnv& env, const ToolRecord& call, int64_t call_seq);

}  // namespace longhaul::llm
