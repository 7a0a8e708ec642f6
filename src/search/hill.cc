// Hill climbing: proposes an untaken neighbour of the best point, in widening rings, so that the
// evaluations near the best are spent before any far from it (the runners-up, which may each top a
// hill of their own, get their one-step neighbours looked at before the best's farther rings):
//   1. one step in one parameter, to the next index above or below. Where a constraint forbids it
//      (say "MC % MR == 0"), both the nearest valid index in that direction and the step itself with
//      one or two other parameters moved as little as makes it valid, so that constraints do not wall
//      the climb in. A step that continues the move which produced the centre comes first (a ridge
//      is climbed in a line, not by sampling every direction at each rung);
//   2. any other value of one parameter, nearest index first;
//   3. one step in each of two parameters (a move that one-parameter steps cannot make when a
//      constraint ties the two, or when each step alone loses).
// Within a ring the choice is random. When no ring has an untaken point left, the climb restarts
// from a random untaken point and continues from the best point found in that region (the points it
// proposed since the restart); a better global best, found by any strategy, takes over again as soon
// as it has neighbours left.
#include "search/strategy.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>

namespace longhaul {
namespace {

struct Move {
  size_t dim;
  int dir;  // +1 or -1
};

class HillStrategy final : public Strategy {
 public:
  const char* name() const override { return "hill"; }

  std::optional<Point> propose(Rng& rng, const History& history) override {
    // The best point, the runners-up (each perhaps at the top of a hill of its own), and the best of
    // the region explored since the last restart.
    std::vector<Point> centers = history.top(kElite);
    std::optional<Point> region;
    if (!region_.empty()) {
      region = region_center(history);
      if (std::find(centers.begin(), centers.end(), *region) == centers.end()) centers.push_back(*region);
    }
    // Every centre's one-step neighbours; then farther values of one parameter from the best and from
    // the region; then two-step moves from the best.
    std::optional<Point> p;
    for (size_t i = 0; i < centers.size() && !p; ++i) p = ring1(rng, centers[i], history);
    if (!p && !centers.empty()) p = ring2(rng, centers.front(), history);
    if (!p && region) p = ring2(rng, *region, history);
    if (!p && !centers.empty()) p = ring3(rng, centers.front(), history);
    if (p) {
      if (!region_.empty()) region_.push_back(*p);
      return p;
    }
    auto start = random_unseen(rng, history);
    if (!start) return std::nullopt;
    region_ = {*start};
    return start;
  }

 private:
  static constexpr size_t kElite = 4;
  static constexpr int kRepairReach = 2;

  static bool in_range(const Space& space, size_t d, int i) { return i >= 0 && i < space.size(d); }

  // One step in one parameter, the continuation of the move that reached c first.
  std::optional<Point> ring1(Rng& rng, const Point& c, const History& history) {
    const Space& space = history.space();
    std::vector<std::pair<Point, Move>> ring;
    auto add = [&](std::optional<Point> q, Move m) {
      if (!q || history.taken(*q)) return;
      for (const auto& [r, _] : ring)
        if (r == *q) return;
      ring.push_back({std::move(*q), m});
    };
    for (size_t d = 0; d < space.dims(); ++d) {
      for (int dir : {-1, +1}) {
        Point q = c;
        q[d] += dir;
        if (!in_range(space, d, q[d])) continue;
        if (space.valid(q)) {
          add(std::move(q), {d, dir});
        } else {
          add(repaired(space, std::move(q), d), {d, dir});
          add(step(space, c, d, dir), {d, dir});
        }
      }
    }
    if (auto it = moves_.find(c); it != moves_.end())
      for (auto& [q, m] : ring)
        if (m.dim == it->second.dim && m.dir == it->second.dir) return remember(q, m);
    if (ring.empty()) return std::nullopt;
    auto& [q, m] = ring[size_t(rng.uniform(ring.size()))];
    return remember(q, m);
  }

  // Every value of one parameter, at the nearest index distance that has any left.
  std::optional<Point> ring2(Rng& rng, const Point& c, const History& history) {
    const Space& space = history.space();
    for (int dist = 2;; ++dist) {
      std::vector<std::pair<Point, Move>> ring;
      bool any_in_range = false;
      for (size_t d = 0; d < space.dims(); ++d) {
        for (int dir : {-1, +1}) {
          Point q = c;
          q[d] = c[d] + dir * dist;
          if (!in_range(space, d, q[d])) continue;
          any_in_range = true;
          if (space.valid(q) && !history.taken(q)) ring.push_back({std::move(q), {d, dir}});
        }
      }
      if (!ring.empty()) {
        auto& [q, m] = ring[size_t(rng.uniform(ring.size()))];
        return remember(q, m);
      }
      if (!any_in_range) return std::nullopt;
    }
  }

  // One step in each of two parameters.
  static std::optional<Point> ring3(Rng& rng, const Point& c, const History& history) {
    const Space& space = history.space();
    std::vector<Point> ring;
    for (size_t d = 0; d < space.dims(); ++d)
      for (size_t e = d + 1; e < space.dims(); ++e)
        for (int dd : {-1, +1})
          for (int de : {-1, +1}) {
            Point q = c;
            q[d] += dd;
            q[e] += de;
            if (!in_range(space, d, q[d]) || !in_range(space, e, q[e])) continue;
            if (space.valid(q) && !history.taken(q)) ring.push_back(std::move(q));
          }
    if (ring.empty()) return std::nullopt;
    return ring[size_t(rng.uniform(ring.size()))];
  }

  Point remember(const Point& to, Move m) {
    moves_[to] = m;
    return to;
  }

  // The nearest valid point to q that keeps q[fixed]: one other parameter changed, else two, each by
  // at most kRepairReach indices; the least total index distance, then the lowest dimensions. Where a
  // constraint ties parameters together (a block a multiple of the tile, a product under a bound),
  // the step in `fixed` is then still tried, with the others moved just enough to allow it.
  static std::optional<Point> repaired(const Space& space, Point q, size_t fixed) {
    std::optional<Point> best;
    int best_cost = INT_MAX;
    auto consider = [&](const Point& r, int cost) {
      if (cost < best_cost && space.valid(r)) {
        best = r;
        best_cost = cost;
      }
    };
    std::vector<int> offsets;
    for (int k = 1; k <= kRepairReach; ++k) offsets.insert(offsets.end(), {-k, k});
    for (size_t e = 0; e < space.dims(); ++e) {
      if (e == fixed) continue;
      for (int a : offsets) {
        Point r = q;
        r[e] += a;
        if (in_range(space, e, r[e])) consider(r, std::abs(a));
      }
    }
    if (best) return best;
    for (size_t e = 0; e < space.dims(); ++e) {
      for (size_t f = e + 1; f < space.dims(); ++f) {
        if (e == fixed || f == fixed) continue;
        for (int a : offsets) {
          for (int b : offsets) {
            Point r = q;
            r[e] += a;
            r[f] += b;
            if (in_range(space, e, r[e]) && in_range(space, f, r[f])) consider(r, std::abs(a) + std::abs(b));
          }
        }
      }
    }
    return best;
  }

  // The nearest valid index from c in dimension d and direction dir, or nullopt.
  static std::optional<Point> step(const Space& space, const Point& c, size_t d, int dir) {
    Point q = c;
    for (int i = c[d] + dir; in_range(space, d, i); i += dir) {
      q[d] = i;
      if (space.valid(q)) return q;
    }
    return std::nullopt;
  }

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

  std::vector<Point> region_;     // points proposed since the last restart; empty before the first
  std::map<Point, Move> moves_;  // the one-parameter move that proposed each point
};

}  // namespace

std::unique_ptr<Strategy> make_hill() { return std::make_unique<HillStrategy>(); }

}  // namespace longhaul
