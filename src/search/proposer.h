// The search proposer: strategies (random, grid, hill climbing, evolution, tpe) and a bandit over
// hill and tpe, all sharing one history of evaluations. Deterministic: the same seed and the same
// observations give the same proposals, which is how a resumed run proposes what the uninterrupted
// run would have.
// Uses: the run loop, which replays the ledger into a fresh proposer on resume.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/space.h"

namespace longhaul {

struct Proposal {
  Point point;
  std::string strategy;  // which strategy proposed it, e.g. "hill"
};

class SearchProposer {
 public:
  // strategy: "bandit" (the default), "random", "grid", "hill", "evolution" or "tpe".
  static Result<std::unique_ptr<SearchProposer>> create(const Space& space, uint64_t seed,
                                                        const std::string& strategy);
  virtual ~SearchProposer() = default;

  // A valid point not evaluated before, or nullopt when the space is exhausted.
  virtual std::optional<Proposal> next() = 0;
  // The result of evaluating `point`: score is higher-is-better (the runtime negates metrics it
  // minimizes), nullopt for a candidate that failed. Every evaluated point is observed, baseline too.
  virtual void observe(const Point& point, std::optional<double> score) = 0;
};

const std::vector<std::string>& search_strategies();

}  // namespace longhaul
