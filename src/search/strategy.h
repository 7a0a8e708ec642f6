// The search proposer's inside: the History every strategy reads, and the Strategy interface that
// random, grid, hill climbing, evolution and tpe implement (one file each). Strategies propose; the
// proposer (proposer.cc) checks, records and, through the AUC bandit (bandit.h), chooses among them.
// Uses: proposer.cc and the strategy tests. Not part of the public API (that is proposer.h).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "search/rng.h"
#include "search/space.h"

namespace longhaul {

// Every observation in order, which points are taken (observed, or proposed and not yet observed),
// and the best so far. Ordered containers only: nothing here depends on addresses or hash order.
class History {
 public:
  struct Observation {
    Point point;
    std::optional<double> score;  // higher is better; nullopt: the candidate failed
  };

  explicit History(const Space& space) : space_(&space) {}

  const Space& space() const { return *space_; }
  const std::vector<Observation>& observations() const { return observations_; }
  bool taken(const Point& p) const { return latest_.count(p) != 0 || pending_.count(p) != 0; }
  bool observed(const Point& p) const { return latest_.count(p) != 0; }
  // The latest score of an observed point (nullopt if failed or never observed).
  std::optional<double> score(const Point& p) const;
  // The best observed point and score: highest latest score, the earliest observation on ties.
  const std::optional<Point>& best() const { return best_; }
  std::optional<double> best_score() const { return best_score_; }
  // Distinct valid points taken so far (what exhaustion is measured against).
  uint64_t valid_taken() const { return valid_taken_; }

  // Scored points, best first (ties: earlier observation first), at most `limit` of them.
  std::vector<Point> top(size_t limit) const;

  void add_pending(const Point& p);  // p must be valid and not taken
  // Records an observation; returns true when it set a new best (strictly better than the old one,
  // or the first score at all).
  bool record(const Point& p, std::optional<double> score);

 private:
  struct Latest {
    std::optional<double> score;
    size_t first = 0;  // index of its first observation, for tie-breaking
  };
  void rescan_best();

  const Space* space_;
  std::vector<Observation> observations_;
  std::map<Point, Latest> latest_;
  std::set<Point> pending_;
  std::optional<Point> best_;
  std::optional<double> best_score_;
  size_t best_first_ = 0;
  uint64_t valid_taken_ = 0;
};

// Bounds on work per proposal, so that a huge or nearly-infeasible space cannot stall the run.
struct SearchLimits {
  // Spaces with at most this many points are enumerated once, making exhaustion exact.
  static constexpr uint64_t kEnumerable = uint64_t(1) << 21;
  static constexpr int kRandomTries = 4096;  // rejection samples before scanning
  static constexpr uint64_t kScanSteps = uint64_t(1) << 16;  // scan length in a huge space
  // In a space too big to count, next() declares it exhausted only after this many failed rounds of
  // random_unseen (each kRandomTries samples and a kScanSteps scan): about a million points looked at.
  static constexpr int kGiveUpRounds = 16;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual const char* name() const = 0;
  // A valid point that `history` has not taken, or nullopt when this strategy finds none now (the
  // proposer then falls back to random). Must draw only from `rng` and read only `history`.
  virtual std::optional<Point> propose(Rng& rng, const History& history) = 0;
};

std::unique_ptr<Strategy> make_random();
std::unique_ptr<Strategy> make_grid();
std::unique_ptr<Strategy> make_hill();
std::unique_ptr<Strategy> make_evolution();
std::unique_ptr<Strategy> make_tpe();

// Shared helpers (random.cc).
// A uniformly drawn point (each index uniform), not checked.
Point random_point(Rng& rng, const Space& space);
// A valid untaken point: rejection sampling, then a mixed-radix scan from a random start (over the
// whole space when it is enumerable, else kScanSteps points). nullopt when none is found.
std::optional<Point> random_unseen(Rng& rng, const History& history);
// Advances p to the next point in mixed-radix order (last dimension fastest), wrapping around.
void next_in_order(const Space& space, Point& p);

}  // namespace longhaul
