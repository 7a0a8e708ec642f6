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
#include <vector>

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

// Whether `name` can be an environment variable's name ([A-Za-z_][A-Za-z0-9_]*, or "" for none): a
// key pasted where its variable's name belongs would otherwise be kept in the run's log.
bool env_name(const std::string& name);

// The environment variables the run keeps from the steps it runs: the one holding the API key. A step
// runs code the model wrote and its output is logged, so it must not see the key.
std::vector<std::string> secret_env(const nlohmann::json& proposer_config);

// Reads FILE.toml: an [llm] table and an optional [agent] table. Unknown keys are errors naming the
// file, line and key. The model may be left to the command line (the CLI requires one in the end).
Result<AgentConfig> load_agent_config(const std::filesystem::path& path);

}  // namespace longhaul::llm
