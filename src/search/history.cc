// History: the record of observations that all strategies share, with the best kept current.
#include "search/strategy.h"

#include <algorithm>
#include <cmath>

namespace longhaul {

std::optional<double> History::score(const Point& p) const {
  auto it = latest_.find(p);
  return it == latest_.end() ? std::nullopt : it->second.score;
}

std::vector<Point> History::top(size_t limit) const {
  std::vector<std::pair<const Point*, const Latest*>> scored;
  for (const auto& [p, l] : latest_)
    if (l.score) scored.push_back({&p, &l});
  auto better = [](const auto& a, const auto& b) {
    if (*a.second->score != *b.second->score) return *a.second->score > *b.second->score;
    return a.second->first < b.second->first;
  };
  size_t n = std::min(limit, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + std::ptrdiff_t(n), scored.end(), better);
  std::vector<Point> out;
  for (size_t i = 0; i < n; ++i) out.push_back(*scored[i].first);
  return out;
}

void History::add_pending(const Point& p) {
  if (pending_.insert(p).second && !latest_.count(p)) ++valid_taken_;
}

bool History::record(const Point& p, std::optional<double> score) {
  if (score && std::isnan(*score)) score.reset();  // a NaN is no measurement
  size_t index = observations_.size();
  observations_.push_back({p, score});
  bool was_taken = taken(p);
  pending_.erase(p);
  auto [it, inserted] = latest_.try_emplace(p, Latest{score, index});
  if (!inserted) it->second.score = score;
  if (!was_taken && space_->valid(p)) ++valid_taken_;

  if (score && (!best_score_ || *score > *best_score_)) {
    best_ = p;
    best_score_ = score;
    best_first_ = it->second.first;
    return true;
  }
  // The best point measured again, lower: someone else may now be best.
  if (best_ && *best_ == p && (!score || *score < *best_score_)) rescan_best();
  return false;
}

void History::rescan_best() {
  best_.reset();
  best_score_.reset();
  for (const auto& [p, l] : latest_) {
    if (!l.score) continue;
    if (!best_score_ || *l.score > *best_score_ || (*l.score == *best_score_ && l.first < best_first_)) {
      best_ = p;
      best_score_ = l.score;
      best_first_ = l.first;
    }
  }
}

}  // namespace longhaul
