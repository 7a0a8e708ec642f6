#include "llm/agent.h"
#include "run/lab.h"
#include "run/search_driver.h"

namespace longhaul {

std::optional<double> attempt_score(const RunState& state, const Attempt& a) {
  if (a.outcome != "ok" || !a.metric) return std::nullopt;
  return state.direction == Direction::minimize ? -*a.metric : *a.metric;
}

Result<std::unique_ptr<Proposer>> make_proposer(const RunState& state, const Task& task) {
  std::string name = state.config.value("proposer", "search");
  if (name == "search") return make_search_driver(state, task);
  if (name == "llm") return llm::make_agent(state, task);
  return Error{"the run names proposer '" + name + "', which this longhaul does not have"};
}

}  // namespace longhaul
