// Hill climbing: proposes an untaken neighbour of the best point, in widening rings, so that the
// evaluations near the best are spent before any far from it:
//   1. one step in one parameter: the nearest valid index above or below (so a constraint such as
//      "MC % MR == 0" does not wall the climb in); a step that continues the move which produced the
//      centre comes first (a ridge is climbed in a line, not by sampling every direction at each rung);
//   2. any other value of one parameter, nearest index first;
//   3. one step in each of two parameters (a move that one-parameter steps cannot make when a
//      constraint ties the two, or when each step alone loses).
// Within a ring the choice is random. When the best point has no untaken point left in any ring, the
// climb restarts from a random untaken point and continues from the best point found in that region
// (the points it proposed since the restart); a better global best, found by any strategy, takes
// over again as soon as it has neighbours left.
#include "search/strategy.h"

#include <algorithm>
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
    if (!region_.empty()) {
      Point c = region_center(history);
      if (std::find(centers.begin(), centers.end(), c) == centers.end()) centers.push_back(std::move(c));
    }
    std::optional<Point> p;
    for (size_t i = 0; i < centers.size() && !p; ++i) p = ring1(rng, centers[i], history);
    for (size_t i = 0; i < centers.size() && !p; ++i)
      if (i == 0 || i + 1 == centers.size()) p = ring2(rng, centers[i], history);  // the best, the region
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

  // One step in one parameter, the continuation of the move that reached c first.
  std::optional<Point> ring1(Rng& rng, const Point& c, const History& history) {
    const Space& space = history.space();
    std::vector<std::pair<Point, Move>> ring;
    for (size_t d = 0; d < space.dims(); ++d)
      for (int dir : {-1, +1})
        if (auto q = step(space, c, d, dir); q && !history.taken(*q)) ring.push_back({std::move(*q), {d, dir}});
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
      bool in_range = false;
      for (size_t d = 0; d < space.dims(); ++d) {
        for (int dir : {-1, +1}) {
          Point q = c;
          q[d] = c[d] + dir * dist;
          if (q[d] < 0 || q[d] >= space.size(d)) continue;
          in_range = true;
          if (space.valid(q) && !history.taken(q)) ring.push_back({std::move(q), {d, dir}});
        }
      }
      if (!ring.empty()) {
        auto& [q, m] = ring[size_t(rng.uniform(ring.size()))];
        return remember(q, m);
      }
      if (!in_range) return std::nullopt;
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
            if (q[d] < 0 || q[d] >= space.size(d) || q[e] < 0 || q[e] >= space.size(e)) continue;
            if (space.valid(q) && !history.taken(q)) ring.push_back(std::move(q));
          }
    if (ring.empty()) return std::nullopt;
    return ring[size_t(rng.uniform(ring.size()))];
  }

  Point remember(const Point& to, Move m) {
    moves_[to] = m;
    return to;
  }

  // The nearest valid index from c in dimension d and direction dir, or nullopt.
  static std::optional<Point> step(const Space& space, const Point& c, size_t d, int dir) {
    Point q = c;
    for (int i = c[d] + dir; i >= 0 && i < space.size(d); i += dir) {
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
