// Constraints between parameters: small integer expressions such as "MC % MR == 0 && KC * NR <= 4096".
// Grammar: || && ! == != < <= > >= + - * / % unary -, parentheses, integer literals, parameter names.
// Uses: the task loader validates them (so a typo is reported with its line); Space evaluates them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "util/result.h"

namespace longhaul {

class Constraint {
 public:
  // `names` are the parameters in declaration order; `integer[i]` says whether parameter i has only
  // integer values (only those may appear in a constraint). Errors name the column and the problem.
  static Result<std::shared_ptr<const Constraint>> compile(const std::string& text,
                                                           const std::vector<std::string>& names,
                                                           const std::vector<bool>& integer);
  virtual ~Constraint() = default;
  // `values[i]` is parameter i's value (unused for non-integer parameters). Division by zero is false.
  virtual bool holds(const std::vector<int64_t>& values) const = 0;
  const std::string& text() const { return text_; }

 protected:
  std::string text_;
};

}  // namespace longhaul
