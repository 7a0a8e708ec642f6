// Constraint: a hand-written lexer and recursive-descent parser into a flat AST, and its evaluator.
// Semantics are C's on int64: comparisons and ! give 0 or 1, && and || short-circuit, / truncates
// toward zero, % takes the dividend's sign. A division or modulo by zero, or an overflow, in a part
// that is evaluated makes the whole constraint false (so "NR != 0 && MC % NR == 0" is safe).
#include "search/expr.h"

#include <optional>
#include <string_view>

namespace longhaul {
namespace {

enum class Op : uint8_t { lit, var, neg, lnot, lor, land, eq, ne, lt, le, gt, ge, add, sub, mul, div, mod };

struct Node {
  Op op;
  int a = -1, b = -1;  // children (node indices)
  int64_t v = 0;       // literal value, or parameter index for var
};

enum class Tok { end, num, name, op, lparen, rparen };

struct Token {
  Tok kind = Tok::end;
  std::string_view text;
  size_t col = 0;  // 1-based
  int64_t value = 0;
};

constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(std::string_view src, const std::vector<std::string>& names, const std::vector<bool>& integer)
      : src_(src), names_(names), integer_(integer) {}

  // Parses the whole text; on success the root is the last node.
  std::optional<Error> parse(std::vector<Node>& out) {
    nodes_ = &out;
    if (auto e = advance()) return e;
    if (tok_.kind == Tok::end) return Error{"empty expression"};
    int root;
    if (auto e = parse_binary(0, root)) return e;
    if (tok_.kind != Tok::end)
      return at(tok_.col, "unexpected '" + std::string(tok_.text) + "' after the end of the expression");
    return std::nullopt;
  }

 private:
  static Error at(size_t col, const std::string& what) {
    return Error{"column " + std::to_string(col) + ": " + what};
  }

  static bool ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  }
  static bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

  // Reads the next token into tok_.
  std::optional<Error> advance() {
    while (pos_ < src_.size() && (src_[pos_] == ' ' || src_[pos_] == '\t' || src_[pos_] == '\n' ||
                                  src_[pos_] == '\r'))
      ++pos_;
    tok_ = Token{};
    tok_.col = pos_ + 1;
    if (pos_ >= src_.size()) return std::nullopt;
    size_t start = pos_;
    char c = src_[pos_];
    if (c >= '0' && c <= '9') {
      while (pos_ < src_.size() && ident_char(src_[pos_])) ++pos_;
      tok_.kind = Tok::num;
      tok_.text = src_.substr(start, pos_ - start);
      uint64_t v = 0;
      for (char d : tok_.text) {
        if (d < '0' || d > '9') return at(tok_.col, "invalid number '" + std::string(tok_.text) + "'");
        if (v > (uint64_t(INT64_MAX) - uint64_t(d - '0')) / 10)
          return at(tok_.col, "integer " + std::string(tok_.text) + " is too large");
        v = v * 10 + uint64_t(d - '0');
      }
      tok_.value = int64_t(v);
      return std::nullopt;
    }
    if (ident_start(c)) {
      while (pos_ < src_.size() && ident_char(src_[pos_])) ++pos_;
      tok_.kind = Tok::name;
      tok_.text = src_.substr(start, pos_ - start);
      return std::nullopt;
    }
    auto two = src_.substr(pos_, 2);
    for (std::string_view op : {"||", "&&", "==", "!=", "<=", ">="}) {
      if (two == op) {
        pos_ += 2;
        tok_.kind = Tok::op;
        tok_.text = op;
        return std::nullopt;
      }
    }
    ++pos_;
    tok_.text = src_.substr(start, 1);
    switch (c) {
      case '(': tok_.kind = Tok::lparen; return std::nullopt;
      case ')': tok_.kind = Tok::rparen; return std::nullopt;
      case '!': case '<': case '>': case '+': case '-': case '*': case '/': case '%':
        tok_.kind = Tok::op;
        return std::nullopt;
      case '=': return at(tok_.col, "'=' is not an operator; did you mean '=='?");
      case '&': return at(tok_.col, "'&' is not an operator; did you mean '&&'?");
      case '|': return at(tok_.col, "'|' is not an operator; did you mean '||'?");
      default:
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
          return at(tok_.col, "unexpected character (byte " + std::to_string(static_cast<unsigned char>(c)) + ")");
        return at(tok_.col, "unexpected character '" + std::string(1, c) + "'");
    }
  }

  int add(Node n) {
    nodes_->push_back(n);
    return int(nodes_->size() - 1);
  }

  // Binary operators by precedence level, loosest first; all left-associative.
  static int level_count() { return 6; }
  static std::optional<Op> binary_op(int level, std::string_view t) {
    struct Entry {
      int level;
      std::string_view text;
      Op op;
    };
    static constexpr Entry table[] = {
        {0, "||", Op::lor}, {1, "&&", Op::land}, {2, "==", Op::eq},  {2, "!=", Op::ne},
        {3, "<", Op::lt},   {3, "<=", Op::le},   {3, ">", Op::gt},   {3, ">=", Op::ge},
        {4, "+", Op::add},  {4, "-", Op::sub},   {5, "*", Op::mul},  {5, "/", Op::div},
        {5, "%", Op::mod},
    };
    for (const auto& e : table)
      if (e.level == level && e.text == t) return e.op;
    return std::nullopt;
  }

  std::optional<Error> parse_binary(int level, int& out) {
    if (level == level_count()) return parse_unary(out);
    int lhs;
    if (auto e = parse_binary(level + 1, lhs)) return e;
    while (tok_.kind == Tok::op) {
      auto op = binary_op(level, tok_.text);
      if (!op) break;
      if (auto e = advance()) return e;
      int rhs;
      if (auto e = parse_binary(level + 1, rhs)) return e;
      lhs = add(Node{*op, lhs, rhs, 0});
    }
    out = lhs;
    return std::nullopt;
  }

  std::optional<Error> parse_unary(int& out) {
    if (++depth_ > kMaxDepth) return at(tok_.col, "expression nested too deeply");
    std::optional<Error> e;
    if (tok_.kind == Tok::op && (tok_.text == "-" || tok_.text == "!")) {
      Op op = tok_.text == "-" ? Op::neg : Op::lnot;
      if ((e = advance())) return e;
      int operand;
      if ((e = parse_unary(operand))) return e;
      out = add(Node{op, operand, -1, 0});
    } else {
      e = parse_primary(out);
    }
    --depth_;
    return e;
  }

  std::optional<Error> parse_primary(int& out) {
    switch (tok_.kind) {
      case Tok::num:
        out = add(Node{Op::lit, -1, -1, tok_.value});
        return advance();
      case Tok::name: {
        std::string name(tok_.text);
        for (size_t i = 0; i < names_.size(); ++i) {
          if (names_[i] != name) continue;
          if (!integer_[i])
            return at(tok_.col, "parameter " + name +
                                    " has string values and cannot appear in a constraint");
          out = add(Node{Op::var, -1, -1, int64_t(i)});
          return advance();
        }
        return at(tok_.col, "unknown parameter '" + name + "'");
      }
      case Tok::lparen: {
        if (auto e = advance()) return e;
        if (auto e = parse_binary(0, out)) return e;
        if (tok_.kind != Tok::rparen) return at(tok_.col, "expected ')'");
        return advance();
      }
      case Tok::end:
        return at(tok_.col, "expected a number, a parameter or '(' but the expression ended");
      default:
        return at(tok_.col, "expected a number, a parameter or '(' but found '" +
                                std::string(tok_.text) + "'");
    }
  }

  std::string_view src_;
  const std::vector<std::string>& names_;
  const std::vector<bool>& integer_;
  std::vector<Node>* nodes_ = nullptr;
  size_t pos_ = 0;
  int depth_ = 0;
  Token tok_;
};

class Compiled final : public Constraint {
 public:
  Compiled(std::string text, std::vector<Node> nodes) : nodes_(std::move(nodes)) {
    text_ = std::move(text);
  }

  bool holds(const std::vector<int64_t>& values) const override {
    auto v = eval(int(nodes_.size()) - 1, values);
    return v && *v != 0;
  }

 private:
  // nullopt: undefined (division by zero, overflow, a missing value).
  std::optional<int64_t> eval(int n, const std::vector<int64_t>& values) const {
    const Node& node = nodes_[size_t(n)];
    switch (node.op) {
      case Op::lit: return node.v;
      case Op::var:
        if (size_t(node.v) >= values.size()) return std::nullopt;
        return values[size_t(node.v)];
      case Op::neg: {
        auto a = eval(node.a, values);
        if (!a || *a == INT64_MIN) return std::nullopt;
        return -*a;
      }
      case Op::lnot: {
        auto a = eval(node.a, values);
        if (!a) return std::nullopt;
        return int64_t(*a == 0);
      }
      case Op::lor: case Op::land: {
        auto a = eval(node.a, values);
        if (!a) return std::nullopt;
        if ((*a != 0) == (node.op == Op::lor)) return int64_t(*a != 0);
        auto b = eval(node.b, values);
        if (!b) return std::nullopt;
        return int64_t(*b != 0);
      }
      default: break;
    }
    auto a = eval(node.a, values);
    if (!a) return std::nullopt;
    auto b = eval(node.b, values);
    if (!b) return std::nullopt;
    int64_t x = *a, y = *b, r = 0;
    switch (node.op) {
      case Op::eq: return int64_t(x == y);
      case Op::ne: return int64_t(x != y);
      case Op::lt: return int64_t(x < y);
      case Op::le: return int64_t(x <= y);
      case Op::gt: return int64_t(x > y);
      case Op::ge: return int64_t(x >= y);
      case Op::add: if (__builtin_add_overflow(x, y, &r)) return std::nullopt; return r;
      case Op::sub: if (__builtin_sub_overflow(x, y, &r)) return std::nullopt; return r;
      case Op::mul: if (__builtin_mul_overflow(x, y, &r)) return std::nullopt; return r;
      case Op::div:
        if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
        return x / y;
      case Op::mod:
        if (y == 0 || (x == INT64_MIN && y == -1)) return std::nullopt;
        return x % y;
      default: return std::nullopt;
    }
  }

  std::vector<Node> nodes_;
};

}  // namespace

Result<std::shared_ptr<const Constraint>> Constraint::compile(const std::string& text,
                                                              const std::vector<std::string>& names,
                                                              const std::vector<bool>& integer) {
  if (names.size() != integer.size())
    return Error{"internal: " + std::to_string(names.size()) + " parameter names but " +
                 std::to_string(integer.size()) + " integer flags"};
  std::vector<Node> nodes;
  Parser parser(text, names, integer);
  if (auto e = parser.parse(nodes)) return *e;
  return std::shared_ptr<const Constraint>(std::make_shared<Compiled>(text, std::move(nodes)));
}

}  // namespace longhaul
