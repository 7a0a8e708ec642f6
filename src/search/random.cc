// Random search: a uniformly drawn valid point not taken yet. Rejection sampling first; when that
// keeps hitting taken or invalid points (a nearly exhausted or tightly constrained space), a scan in
// mixed-radix order from a random start, which over an enumerable space finds a point if one exists.
// Also the fallback of every other strategy.
#include "search/strategy.h"

namespace longhaul {

Point random_point(Rng& rng, const Space& space) {
  Point p(space.dims());
  for (size_t d = 0; d < space.dims(); ++d) p[d] = space.size(d) <= 1 ? 0 : rng.uniform_int(space.size(d));
  return p;
}

void next_in_order(const Space& space, Point& p) {
  for (size_t d = space.dims(); d-- > 0;) {
    if (++p[d] < space.size(d)) return;
    p[d] = 0;
  }
}

std::optional<Point> random_unseen(Rng& rng, const History& history) {
  const Space& space = history.space();
  for (int i = 0; i < SearchLimits::kRandomTries; ++i) {
    Point p = random_point(rng, space);
    if (!history.taken(p) && space.valid(p)) return p;
  }
  uint64_t card = space.cardinality();
  uint64_t steps = card <= SearchLimits::kEnumerable ? card : SearchLimits::kScanSteps;
  Point p = random_point(rng, space);
  for (uint64_t i = 0; i < steps; ++i, next_in_order(space, p))
    if (!history.taken(p) && space.valid(p)) return p;
  return std::nullopt;
}

namespace {

class RandomStrategy final : public Strategy {
 public:
  const char* name() const override { return "random"; }
  std::optional<Point> propose(Rng& rng, const History& history) override {
    return random_unseen(rng, history);
  }
};

}  // namespace

std::unique_ptr<Strategy> make_random() { return std::make_unique<RandomStrategy>(); }

}  // namespace longhaul
