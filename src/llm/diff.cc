#include "llm/diff.h"

#include <algorithm>
#include <set>
#include <string_view>
#include <vector>

namespace longhaul::llm {
namespace {

std::vector<std::string_view> split_lines(const std::string& s) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    lines.emplace_back(s.data() + start, end - start);
    start = end + 1;
  }
  return lines;
}

// ' ' kept, '-' removed (from a), '+' added (from b), in order.
std::vector<std::pair<char, std::string_view>> edit_script(const std::string& sa, const std::string& sb) {
  auto a = split_lines(sa), b = split_lines(sb);
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head && a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) ++tail;
  std::vector<std::pair<char, std::string_view>> out;
  for (size_t i = 0; i < head; ++i) out.emplace_back(' ', a[i]);
  size_t n = a.size() - head - tail, m = b.size() - head - tail;
  if (n * m > 4'000'000) {
    for (size_t i = 0; i < n; ++i) out.emplace_back('-', a[head + i]);
    for (size_t j = 0; j < m; ++j) out.emplace_back('+', b[head + j]);
  } else {
    // lcs[i][j]: LCS length of a[head+i..] and b[head+j..].
    std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
    auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
    for (size_t i = n; i-- > 0;)
      for (size_t j = m; j-- > 0;)
        at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
    size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && a[head + i] == b[head + j]) {
        out.emplace_back(' ', a[head + i]); ++i; ++j;
      } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
        out.emplace_back('-', a[head + i]); ++i;  // removals before additions, as diff(1) prints
      } else {
        out.emplace_back('+', b[head + j]); ++j;
      }
    }
  }
  for (size_t k = a.size() - tail; k < a.size(); ++k) out.emplace_back(' ', a[k]);
  return out;
}

}  // namespace

LineChange changed_lines(const std::string& a, const std::string& b) {
  LineChange c;
  if (a == b) return c;
  for (const auto& [op, line] : edit_script(a, b)) {
    if (op == '+') ++c.added;
    if (op == '-') ++c.removed;
  }
  return c;
}

std::string unified_diff(const std::string& a, const std::string& b, const std::string& path) {
  if (a == b) return "";
  auto script = edit_script(a, b);
  std::string out = "--- a/" + path + "\n+++ b/" + path + "\n";
  const size_t ctx = 3;
  size_t k = 0;
  while (k < script.size()) {
    while (k < script.size() && script[k].first == ' ') ++k;
    if (k == script.size()) break;
    size_t start = k >= ctx ? k - ctx : 0, end = k;
    // Extend the hunk while changes are within 2*ctx of each other.
    while (end < script.size()) {
      size_t next = end;
      while (next < script.size() && script[next].first != ' ') ++next;
      size_t gap = next;
      while (gap < script.size() && script[gap].first == ' ') ++gap;
      if (gap < script.size() && gap - next <= 2 * ctx) end = gap;
      else { end = std::min(script.size(), next + ctx); break; }
    }
    size_t la = 1, lb = 1;
    for (size_t q = 0; q < start; ++q) {
      if (script[q].first != '+') ++la;
      if (script[q].first != '-') ++lb;
    }
    size_t na = 0, nb = 0;
    for (size_t q = start; q < end; ++q) {
      if (script[q].first != '+') ++na;
      if (script[q].first != '-') ++nb;
    }
    out += "@@ -" + std::to_string(la) + "," + std::to_string(na) + " +" + std::to_string(lb) + "," +
           std::to_string(nb) + " @@\n";
    for (size_t q = start; q < end; ++q) {
      out += script[q].first;
      out.append(script[q].second);
      out += '\n';
    }
    k = end;
  }
  return out;
}

namespace {
std::set<std::string> all_paths(const std::map<std::string, std::string>& a,
                                const std::map<std::string, std::string>& b) {
  std::set<std::string> paths;
  for (const auto& [p, _] : a) paths.insert(p);
  for (const auto& [p, _] : b) paths.insert(p);
  return paths;
}
const std::string& content_or_empty(const std::map<std::string, std::string>& m, const std::string& p) {
  static const std::string kEmpty;
  auto it = m.find(p);
  return it == m.end() ? kEmpty : it->second;
}
}  // namespace

LineChange changed_lines(const std::map<std::string, std::string>& a,
                         const std::map<std::string, std::string>& b) {
  LineChange total;
  for (const auto& p : all_paths(a, b)) {
    LineChange c = changed_lines(content_or_empty(a, p), content_or_empty(b, p));
    total.added += c.added;
    total.removed += c.removed;
  }
  return total;
}

std::string unified_diff(const std::map<std::string, std::string>& a,
                         const std::map<std::string, std::string>& b) {
  std::string out;
  for (const auto& p : all_paths(a, b)) out += unified_diff(content_or_empty(a, p), content_or_empty(b, p), p);
  return out;
}

}  // namespace longhaul::llm
