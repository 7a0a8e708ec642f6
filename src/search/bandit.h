// AucBandit: chooses which search technique proposes next, after OpenTuner's AUCBanditMetaTechnique.
// A sliding window of the last `window` uses of all techniques records, per use, whether it found a
// new best. A technique's credit is the area under the curve of its own uses in the window, recent
// ones weighted more (sum i*x_i / (n(n+1)/2), i = 1 for its oldest); its score is
// credit + c * sqrt(2 ln N / n), N all uses in the window, n its own. A technique with no use in
// the window is chosen first, so none starves. Ties go to the lowest index. Uses in flight (proposed,
// not yet observed) count as uses, so parallel proposals spread. Uses: proposer.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace longhaul {

class AucBandit {
 public:
  explicit AucBandit(size_t arms, size_t window = 50, double c = 0.05);

  size_t choose() const;
  void start(size_t arm);              // a use began (its point is in flight)
  void finish(size_t arm, bool gain);  // a started use ended
  void record(size_t arm, bool gain);  // a use that began and ended at once

  size_t uses(size_t arm) const;  // in the window or in flight
  double credit(size_t arm) const;
  double score(size_t arm) const;
  uint64_t total_uses(size_t arm) const { return total_[arm]; }  // since the start

 private:
  void push(size_t arm, bool gain);

  size_t window_size_;
  double c_;
  std::deque<std::pair<size_t, bool>> window_;  // oldest first
  std::vector<size_t> in_flight_;
  std::vector<uint64_t> total_;
};

}  // namespace longhaul
