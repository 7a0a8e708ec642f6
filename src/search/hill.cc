// Hill climbing: proposes an untaken neighbour of the best point, chosen at random. A neighbour
// differs in one parameter by one step: the nearest valid index above or below (so a constraint
// such as "MC % MR == 0" does not wall the climb in). When the best point has no untaken neighbour
// left, the climb restarts from a random untaken point and continues from the best point found in
// that region (the points it proposed since the restart); a better global best, found by any
// strategy, takes over again as soon as it has neighbours left.
#include "search/strategy.h"

namespace longhaul {
namespace {

class HillStrategy final : public Strategy {
 public:
  const char* name() const override { return "hill"; }

  std::optional<Point> propose(Rng& rng, const History& history) override {
    std::vector<Point> centers;
    if (history.best()) centers.push_back(*history.best());
    if (!region_.empty()) {
      Point c = region_center(history);
      if (centers.empty() || c != centers.front()) centers.push_back(std::move(c));
    }
    for (const Point& c : centers) {
      auto ns = neighbours(c, history);
      if (ns.empty()) continue;
      Point p = ns[size_t(rng.uniform(ns.size()))];
      if (!region_.empty()) region_.push_back(p);
      return p;
    }
    auto start = random_unseen(rng, history);
    if (!start) return std::nullopt;
    region_ = {*start};
    return start;
  }

 private:
  // The best scored point of the current region, else its starting point.
  Point region_center(const History& history) const {
    const Point* best = &region_.front();
    std::optional<double> best_score;
    for (const Point& p : region_) {
      auto s = history.score(p);
      if (s && (!best_score || *s > *best_score)) {
        best = &p;
        best_score = s;
      }
    }
    return *best;
  }

  static std::vector<Point> neighbours(const Point& c, const History& history) {
    const Space& space = history.space();
    std::vector<Point> out;
    for (size_t d = 0; d < space.dims(); ++d) {
      for (int dir : {-1, +1}) {
        Point q = c;
        for (int i = c[d] + dir; i >= 0 && i < space.size(d); i += dir) {
          q[d] = i;
          if (!space.valid(q)) continue;
          if (!history.taken(q)) out.push_back(q);
          break;
        }
      }
    }
    return out;
  }

  std::vector<Point> region_;  // points proposed since the last restart; empty before the first
};

}  // namespace

std::unique_ptr<Strategy> make_hill() { return std::make_unique<HillStrategy>(); }

}  // namespace longhaul
