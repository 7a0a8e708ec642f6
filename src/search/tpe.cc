// TPE: a model-based strategy after the tree-structured Parzen estimator (Bergstra et al. 2011; the
// independent sampler of Optuna and Hyperopt). The observed points are split into a good set (the best
// kGamma of them, at most kMaxGood) and the rest; per parameter, each set gives a distribution over
// its values (a Parzen estimate: counts smoothed by a uniform prior, and for ordered integer
// parameters spread to the neighbouring values, since nearby block sizes tend to perform alike).
// Candidates are drawn from the good distribution and the one with the highest ratio good/bad is
// proposed: where the good points cluster and the bad ones do not. It learns which value of each
// parameter matters from every strategy's observations, so with few evaluations it converges on the
// region that others only stumble into. Failed candidates count as bad. Until kStartup points are
// scored it proposes at random.
#include "search/strategy.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace longhaul {
namespace {

constexpr size_t kStartup = 10;      // scored points before the model is used
constexpr double kGamma = 0.15;      // share of the observed points that count as good
constexpr size_t kMaxGood = 25;
constexpr double kPriorWeight = 1.0;  // one pseudo-observation spread evenly over a parameter's values
constexpr int kCandidates = 64;       // valid untaken draws compared per proposal
constexpr int kDrawsPerCandidate = 16;

class TpeStrategy final : public Strategy {
 public:
  const char* name() const override { return "tpe"; }

  std::optional<Point> propose(Rng& rng, const History& history) override {
    const Space& space = history.space();
    // The latest outcome of every distinct observed point, best first; failures last, in order.
    std::vector<Point> ranked = history.top(SIZE_MAX);
    if (ranked.size() < kStartup) return random_unseen(rng, history);
    const size_t scored = ranked.size();
    std::set<Point> seen(ranked.begin(), ranked.end());
    for (const auto& o : history.observations())
      if (!history.score(o.point) && seen.insert(o.point).second) ranked.push_back(o.point);

    // The good set never reaches into the failures, however many there are.
    const size_t good = std::min({kMaxGood, scored, std::max<size_t>(1, size_t(std::ceil(kGamma * double(ranked.size()))))});
    std::vector<std::vector<double>> l(space.dims()), g(space.dims());
    for (size_t d = 0; d < space.dims(); ++d) {
      l[d] = density(space, d, ranked.begin(), ranked.begin() + std::ptrdiff_t(good));
      g[d] = density(space, d, ranked.begin() + std::ptrdiff_t(good), ranked.end());
    }

    std::optional<Point> best;
    double best_ratio = -INFINITY;
    int found = 0;
    for (int draw = 0; draw < kCandidates * kDrawsPerCandidate && found < kCandidates; ++draw) {
      Point p(space.dims());
      double ratio = 0;
      for (size_t d = 0; d < space.dims(); ++d) {
        p[d] = sample(rng, l[d]);
        ratio += std::log(l[d][size_t(p[d])]) - std::log(g[d][size_t(p[d])]);
      }
      if (!space.valid(p) || history.taken(p)) continue;
      ++found;
      if (ratio > best_ratio) {
        best = std::move(p);
        best_ratio = ratio;
      }
    }
    return best;
  }

 private:
  // A distribution over the values of dimension d from the points [begin, end): the prior, plus for
  // each point a kernel at its value (for ordered parameters 1/2 of it on each adjacent value, 1/8 two
  // away, renormalised at the edges), normalised to sum to 1.
  static std::vector<double> density(const Space& space, size_t d, std::vector<Point>::const_iterator begin,
                                     std::vector<Point>::const_iterator end) {
    int n = space.size(d);
    std::vector<double> w(size_t(n), kPriorWeight / n);
    bool ordered = ordered_dim(space, d);
    static constexpr double kKernel[] = {1.0, 0.5, 0.125};
    for (auto it = begin; it != end; ++it) {
      int x = (*it)[d];
      double mass = 0;
      for (int k = -2; k <= 2; ++k)
        if (x + k >= 0 && x + k < n && (ordered || k == 0)) mass += kKernel[std::abs(k)];
      for (int k = -2; k <= 2; ++k)
        if (x + k >= 0 && x + k < n && (ordered || k == 0)) w[size_t(x + k)] += kKernel[std::abs(k)] / mass;
    }
    double total = 0;
    for (double v : w) total += v;
    for (double& v : w) v /= total;
    return w;
  }

  // Integer values listed in increasing order: a step to the next value is a small change.
  static bool ordered_dim(const Space& space, size_t d) {
    const auto& values = space.params()[d].values;
    for (size_t i = 0; i < values.size(); ++i) {
      if (!values[i].is_number_integer()) return false;
      if (i > 0 && !(values[i - 1].get<int64_t>() < values[i].get<int64_t>())) return false;
    }
    return true;
  }

  static int sample(Rng& rng, const std::vector<double>& p) {
    double u = rng.uniform01();
    for (size_t i = 0; i < p.size(); ++i) {
      if (u < p[i]) return int(i);
      u -= p[i];
    }
    return int(p.size()) - 1;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_tpe() { return std::make_unique<TpeStrategy>(); }

}  // namespace longhaul
