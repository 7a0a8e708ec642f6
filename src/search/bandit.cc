// AucBandit: the credit assignment and choice rule described in bandit.h.
#include "search/bandit.h"

#include <cmath>
#include <numeric>

namespace longhaul {

AucBandit::AucBandit(size_t arms, size_t window, double c)
    : window_size_(window == 0 ? 1 : window), c_(c), in_flight_(arms, 0), total_(arms, 0) {}

size_t AucBandit::uses(size_t arm) const {
  size_t n = in_flight_[arm];
  for (const auto& [a, gain] : window_) n += a == arm;
  return n;
}

double AucBandit::credit(size_t arm) const {
  double auc = 0;
  size_t n = 0;
  for (const auto& [a, gain] : window_) {
    if (a != arm) continue;
    ++n;
    if (gain) auc += double(n);
  }
  return n == 0 ? 0.0 : auc / (double(n) * double(n + 1) / 2.0);
}

double AucBandit::score(size_t arm) const {
  size_t n = uses(arm);
  if (n == 0) return INFINITY;
  size_t all = window_.size() + std::accumulate(in_flight_.begin(), in_flight_.end(), size_t(0));
  return credit(arm) + c_ * std::sqrt(2.0 * std::log(double(all)) / double(n));
}

size_t AucBandit::choose() const {
  size_t best = 0;
  double best_score = -INFINITY;
  for (size_t arm = 0; arm < total_.size(); ++arm) {
    double s = score(arm);
    if (s > best_score) {
      best = arm;
      best_score = s;
    }
  }
  return best;
}

void AucBandit::start(size_t arm) {
  ++in_flight_[arm];
  ++total_[arm];
}

void AucBandit::finish(size_t arm, bool gain) {
  if (in_flight_[arm] > 0) --in_flight_[arm];
  push(arm, gain);
}

void AucBandit::record(size_t arm, bool gain) {
  ++total_[arm];
  push(arm, gain);
}

void AucBandit::push(size_t arm, bool gain) {
  window_.emplace_back(arm, gain);
  while (window_.size() > window_size_) window_.pop_front();
}

}  // namespace longhaul
