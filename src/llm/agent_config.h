// The LLM proposer's configuration: the client's settings (an [llm] table, docs/llm.md) and the
// agent's own (an [agent] table: the context's token budget, budgets in turns, tokens and money, when
// to call the search stale). Read from a TOML file by `longhaul run --llm-config`, kept in run_created
// as JSON (the API key's variable NAME only, never its value) and rebuilt from there on resume.
// Uses: the CLI; make_proposer; tests.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/client.h"
#include "util/result.h"

namespace longhaul::llm {

struct AgentConfig {
  ClientConfig client;                 // tools are filled in by the agent
  int64_t context_tokens = 32000;      // budget of one request, estimated as bytes / 4 (docs/llm.md)
  std::optional<int64_t> max_turns;    // replies received
  std::optional<int64_t> max_tokens;   // prompt + completion tokens, as the server reports them
  std::optional<double> max_cost;      // in the prices' currency
  int stale_after = 8;                 // evaluations without a gain before the card says so
  int64_t tool_output_bytes = 8000;    // a tool's result is clipped to this before it is logged
};

// The JSON kept in run_created's "proposer_config": {"llm": {...}, "agent": {...}}.
nlohmann::json to_json(const AgentConfig& c);
Result<AgentConfig> agent_config_from_json(const nlohmann::json& j);

// Reads FILE.toml: an [llm] table (required: model) and an optional [agent] table. Unknown keys are
// errors naming the file, line and key.
Result<AgentConfig> load_agent_config(const std::filesystem::path& path);

}  // namespace longhaul::llm
