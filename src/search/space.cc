// Space: checks a task's parameter space, compiles its constraints, and maps points to and from
// the {"NAME": value} form that candidates and the event log carry.
#include "search/space.h"

#include <set>

#include "search/expr.h"

namespace longhaul {
namespace {

// An integer value a constraint can use: a JSON integer that fits in int64.
bool int64_value(const nlohmann::json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>() <= uint64_t(INT64_MAX);
  return v.is_number_integer();
}

}  // namespace

Result<Space> Space::compile(const ParamSpace& ps) {
  Space space;
  std::vector<std::string> names;
  std::vector<bool> integer;
  std::set<std::string> seen_names;
  for (const Param& p : ps.params) {
    if (p.name.empty()) return Error{"a parameter has no name"};
    if (!seen_names.insert(p.name).second) return Error{"parameter " + p.name + " is declared twice"};
    if (p.values.empty()) return Error{"parameter " + p.name + " has no values"};
    if (p.default_index >= p.values.size())
      return Error{"parameter " + p.name + ": default index " + std::to_string(p.default_index) +
                   " is out of range (it has " + std::to_string(p.values.size()) + " values)"};
    bool all_int = true;
    for (size_t i = 0; i < p.values.size(); ++i) {
      const auto& v = p.values[i];
      if (!v.is_string() && !v.is_number_integer())
        return Error{"parameter " + p.name + ": value " + v.dump() + " is neither an integer nor a string"};
      if (!int64_value(v) && !v.is_string())
        return Error{"parameter " + p.name + ": value " + v.dump() + " does not fit in 64 bits"};
      all_int = all_int && v.is_number_integer();
      for (size_t j = 0; j < i; ++j)
        if (p.values[j] == v) return Error{"parameter " + p.name + " has the value " + v.dump() + " twice"};
    }
    names.push_back(p.name);
    integer.push_back(all_int);
    space.params_.push_back(p);
  }
  for (const auto& text : ps.constraints) {
    auto c = Constraint::compile(text, names, integer);
    if (!c) return Error{"constraint '" + text + "': " + c.error()};
    space.constraints_.push_back(std::move(c.value()));
  }
  return space;
}

uint64_t Space::cardinality() const {
  uint64_t n = 1;
  for (const auto& p : params_) {
    uint64_t s = p.values.size();
    if (n > UINT64_MAX / s) return UINT64_MAX;
    n *= s;
  }
  return n;
}

bool Space::valid(const Point& p) const {
  if (p.size() != params_.size()) return false;
  for (size_t i = 0; i < p.size(); ++i)
    if (p[i] < 0 || size_t(p[i]) >= params_[i].values.size()) return false;
  if (constraints_.empty()) return true;
  std::vector<int64_t> values(p.size(), 0);
  for (size_t i = 0; i < p.size(); ++i) {
    const auto& v = params_[i].values[size_t(p[i])];
    if (int64_value(v)) values[i] = v.get<int64_t>();
  }
  for (const auto& c : constraints_)
    if (!c->holds(values)) return false;
  return true;
}

Point Space::default_point() const {
  Point p;
  p.reserve(params_.size());
  for (const auto& param : params_) p.push_back(int(param.default_index));
  return p;
}

nlohmann::json Space::to_json(const Point& p) const {
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < params_.size() && i < p.size(); ++i)
    if (p[i] >= 0 && size_t(p[i]) < params_[i].values.size())
      out[params_[i].name] = params_[i].values[size_t(p[i])];
  return out;
}

// Exactly the declared names, each with one of its declared values; constraints are not checked.
std::optional<Point> Space::from_json(const nlohmann::json& values) const {
  if (!values.is_object() || values.size() != params_.size()) return std::nullopt;
  Point p;
  p.reserve(params_.size());
  for (const auto& param : params_) {
    auto it = values.find(param.name);
    if (it == values.end()) return std::nullopt;
    int index = -1;
    for (size_t j = 0; j < param.values.size(); ++j) {
      // Same type family, so that 64 never matches "64".
      if (param.values[j].is_string() != it->is_string()) continue;
      if (param.values[j] == *it) {
        index = int(j);
        break;
      }
    }
    if (index < 0) return std::nullopt;
    p.push_back(index);
  }
  return p;
}

}  // namespace longhaul
