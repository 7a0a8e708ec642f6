// Evolution: a steady-state genetic search over the best observed points. Two parents are chosen by
// tournament among the top kPopulation, combined by uniform crossover, and mutated in one or two
// parameters (half the time by one step, else to a random other value). Children that are invalid or
// taken are redrawn a bounded number of times; then the proposer falls back to random.
#include "search/strategy.h"

#include <algorithm>

namespace longhaul {
namespace {

constexpr size_t kPopulation = 12;
constexpr int kTournament = 3;
constexpr int kAttempts = 32;

class EvolutionStrategy final : public Strategy {
 public:
  const char* name() const override { return "evolution"; }

  std::optional<Point> propose(Rng& rng, const History& history) override {
    const Space& space = history.space();
    auto top = history.top(kPopulation);  // best first
    if (top.empty()) return std::nullopt;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const Point& a = top[tournament(rng, top.size())];
      const Point& b = top[tournament(rng, top.size())];
      Point child(space.dims());
      for (size_t d = 0; d < space.dims(); ++d) child[d] = rng.coin() ? a[d] : b[d];
      mutate(rng, space, child);
      if (space.valid(child) && !history.taken(child)) return child;
    }
    return std::nullopt;
  }

 private:
  static size_t tournament(Rng& rng, size_t n) {
    size_t winner = n;
    for (int i = 0; i < kTournament; ++i) winner = std::min(winner, size_t(rng.uniform(n)));
    return winner;  // the lowest rank drawn is the fittest
  }

  static void mutate(Rng& rng, const Space& space, Point& p) {
    std::vector<size_t> mutable_dims;
    for (size_t d = 0; d < space.dims(); ++d)
      if (space.size(d) > 1) mutable_dims.push_back(d);
    if (mutable_dims.empty()) return;
    size_t count = (mutable_dims.size() >= 2 && rng.coin()) ? 2 : 1;
    for (size_t k = 0; k < count; ++k) {
      size_t pick = k + size_t(rng.uniform(mutable_dims.size() - k));  // distinct dims
      std::swap(mutable_dims[k], mutable_dims[pick]);
      size_t d = mutable_dims[k];
      int n = space.size(d);
      if (rng.coin()) {
        int step = rng.coin() ? 1 : -1;
        if (p[d] + step < 0 || p[d] + step >= n) step = -step;
        p[d] += step;
      } else {
        int v = rng.uniform_int(n - 1);
        p[d] = v >= p[d] ? v + 1 : v;  // any value but the current one
      }
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_evolution() { return std::make_unique<EvolutionStrategy>(); }

}  // namespace longhaul
