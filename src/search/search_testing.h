// Helpers for the search tests: small synthetic spaces and objectives. Test-only (header, so the
// library never links it).
#pragma once
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "search/proposer.h"
#include "search/space.h"

namespace longhaul::search_testing {

// Integer parameters P0, P1, ... with values 0..size-1 (times `scale`), defaults at index 0.
inline Space make_space(const std::vector<int>& sizes, const std::vector<std::string>& constraints = {},
                        int scale = 1) {
  ParamSpace ps;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Param p;
    p.name = "P" + std::to_string(i);
    for (int v = 0; v < sizes[i]; ++v) p.values.push_back(v * scale);
    ps.params.push_back(p);
  }
  ps.constraints = constraints;
  auto s = Space::compile(ps);
  if (!s.ok()) throw std::runtime_error(s.error());
  return std::move(s).value();
}

inline uint64_t count_valid(const Space& space) {
  uint64_t n = 0;
  Point p(space.dims(), 0);
  for (uint64_t i = 0; i < space.cardinality(); ++i) {
    n += space.valid(p);
    for (size_t d = space.dims(); d-- > 0;) {
      if (++p[d] < space.size(d)) break;
      p[d] = 0;
    }
  }
  return n;
}

using Objective = std::function<std::optional<double>(const Point&)>;

// Concave bowl with its peak at `target`: score 0 there, -sum (x - t)^2 elsewhere.
inline Objective bowl(Point target) {
  return [target](const Point& p) -> std::optional<double> {
    double s = 0;
    for (size_t d = 0; d < p.size(); ++d) s -= double(p[d] - target[d]) * double(p[d] - target[d]);
    return s;
  };
}

// A bowl whose candidates sometimes fail (every point with (P0 + 2 P1) % 7 == 3).
inline Objective flaky_bowl(Point target) {
  auto b = bowl(target);
  return [b](const Point& p) -> std::optional<double> {
    if (p.size() >= 2 && (p[0] + 2 * p[1]) % 7 == 3) return std::nullopt;
    return b(p);
  };
}

// Runs `steps` proposals, observing each at once, after the baseline; returns the proposals.
inline std::vector<Proposal> drive(SearchProposer& proposer, const Space& space, const Objective& f,
                                   int steps) {
  proposer.observe(space.default_point(), f(space.default_point()));
  std::vector<Proposal> out;
  for (int i = 0; i < steps; ++i) {
    auto p = proposer.next();
    if (!p) break;
    proposer.observe(p->point, f(p->point));
    out.push_back(*p);
  }
  return out;
}

inline std::unique_ptr<SearchProposer> make_proposer(const Space& space, uint64_t seed,
                                                     const std::string& strategy) {
  auto p = SearchProposer::create(space, seed, strategy);
  if (!p.ok()) throw std::runtime_error(p.error());
  return std::move(p).value();
}

}  // namespace longhaul::search_testing
