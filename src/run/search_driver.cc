// The search proposer as a run's proposer: one point evaluated per step. On resume it is rebuilt from
// the seed and fed the ledger in order; it must propose each logged attempt again, or the log was made
// by something else and the run refuses to go on.
#include "run/search_driver.h"

#include "search/proposer.h"

namespace longhaul {
namespace {

class SearchDriver : public Proposer {
 public:
  SearchDriver(Space space, std::unique_ptr<SearchProposer> proposer)
      : space_(std::move(space)), proposer_(std::move(proposer)) {}

  Status resume(Lab& lab) override {
    const RunState& s = lab.state();
    for (const Attempt& a : s.ledger) {
      auto point = space_.from_json(a.params);
      if (!point) return Error{"attempt " + std::to_string(a.index) + " has parameters outside the space"};
      if (!a.baseline()) {
        auto p = proposer_->next();
        if (!p || p->point != *point)
          return Error{"replaying the log, the search proposer did not propose attempt " +
                       std::to_string(a.index) + " again: the log was made by a different proposer"};
      }
      proposer_->observe(*point, attempt_score(s, a));
    }
    return ok_status();
  }

  std::optional<std::string> step(Lab& lab) override {
    auto p = proposer_->next();
    if (!p) return "exhausted";
    int index = lab.evaluate(lab.base_candidate(space_.to_json(p->point)), p->strategy);
    proposer_->observe(p->point, attempt_score(lab.state(), lab.state().ledger[size_t(index)]));
    return std::nullopt;
  }

 private:
  Space space_;
  std::unique_ptr<SearchProposer> proposer_;
};

}  // namespace

Result<std::unique_ptr<Proposer>> make_search_driver(const RunState& state, const Task& task) {
  auto space = Space::compile(task.space);
  if (!space) return Error{"parameter space: " + space.error()};
  uint64_t seed = std::stoull(state.config.value("seed", "0"));
  auto proposer = SearchProposer::create(*space, seed, state.config.value("strategy", "bandit"));
  if (!proposer) return Error{proposer.error()};
  return std::unique_ptr<Proposer>(new SearchDriver(std::move(*space), std::move(*proposer)));
}

}  // namespace longhaul
