// The LLM proposer: a tool-calling agent that improves the task's candidate through an
// OpenAI-compatible model. Each step is one turn: build the context from the log (compacting it first
// when it would not fit), log the request, send it, log the reply, then run each tool call between a
// tool_call intent and its tool_result. Everything it knows is folded from the run's events
// (Transcript, RunState), so resume() is a fold: a request whose reply was logged is never sent again,
// one in flight is sent again as it was, and a tool call without its result is finished (an
// evaluate that the runner already finished is reported from the ledger).
// Stops with "max_turns", "max_tokens", "max_cost" (its own budgets) or "llm_error" (the client gave
// up; the run is resumable). Uses: make_proposer for run_created's proposer "llm". See docs/llm.md.
#pragma once
#include <memory>

#include "llm/agent_config.h"
#include "run/lab.h"

namespace longhaul::llm {

Result<std::unique_ptr<Proposer>> make_agent(const RunState& state, const Task& task);
std::unique_ptr<Proposer> make_agent(AgentConfig config);

}  // namespace longhaul::llm
