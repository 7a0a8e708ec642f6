// Grid search: walks the space in mixed-radix order (last parameter fastest, like nested loops in
// declaration order) from a start chosen by the seed, skipping invalid and taken points. In a space
// too big to count, each call walks a bounded stretch, and a fruitless stretch moves the walk elsewhere.
#include "search/strategy.h"

namespace longhaul {
namespace {

class GridStrategy final : public Strategy {
 public:
  const char* name() const override { return "grid"; }

  std::optional<Point> propose(Rng& rng, const History& history) override {
    const Space& space = history.space();
    if (!cursor_) cursor_ = random_point(rng, space);
    uint64_t card = space.cardinality();
    // One full lap finds a point if any is left; in a huge space walk a bounded stretch per call.
    uint64_t steps = card <= SearchLimits::kEnumerable ? card : SearchLimits::kScanSteps;
    Point& p = *cursor_;
    for (uint64_t i = 0; i < steps; ++i) {
      bool ok = !history.taken(p) && space.valid(p);
      Point here = p;
      next_in_order(space, p);
      if (ok) return here;
    }
    cursor_.reset();  // a huge space: try another stretch next time
    return std::nullopt;
  }

 private:
  std::optional<Point> cursor_;  // the next point to consider
};

}  // namespace

std::unique_ptr<Strategy> make_grid() { return std::make_unique<GridStrategy>(); }

}  // namespace longhaul
