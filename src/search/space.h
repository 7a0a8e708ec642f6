// The parameter space of a task as the search proposer sees it: a point is one value index per
// parameter; constraints decide which points are valid. Uses: proposers, baseline, candidate params.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "task/task.h"
#include "util/result.h"

namespace longhaul {

using Point = std::vector<int>;  // index into each parameter's values, in declaration order

class Constraint;  // a compiled expression (search/expr.h)

class Space {
 public:
  // Fails with a message naming the constraint and what is wrong in it.
  static Result<Space> compile(const ParamSpace& space);

  size_t dims() const { return params_.size(); }
  int size(size_t dim) const { return int(params_[dim].values.size()); }
  const std::vector<Param>& params() const { return params_; }
  // Product of the sizes, saturating at UINT64_MAX.
  uint64_t cardinality() const;

  bool valid(const Point& p) const;
  Point default_point() const;
  nlohmann::json to_json(const Point& p) const;         // {"MC": 64, "ORDER": "ikj", ...}
  std::optional<Point> from_json(const nlohmann::json& values) const;

 private:
  std::vector<Param> params_;
  std::vector<std::shared_ptr<const Constraint>> constraints_;
};

}  // namespace longhaul
