// Line diffs of the small text files a candidate is made of: a unified diff for the model
// (show_best) and the size of a change in lines for the attempt ledger. A longest-common-subsequence
// diff after trimming the common head and tail; a middle too large for it (over 4M line pairs) counts
// as replaced whole. Uses: the LLM proposer's tools and memory.
#pragma once
#include <map>
#include <string>

namespace longhaul::llm {

struct LineChange {
  int added = 0, removed = 0;
  int total() const { return added + removed; }
};

LineChange changed_lines(const std::string& a, const std::string& b);
// "--- a/PATH\n+++ b/PATH\n@@ ... @@\n..." with 3 lines of context; "" when equal.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& path);
// Over the union of paths; a file on one side only is diffed against "".
LineChange changed_lines(const std::map<std::string, std::string>& a,
                         const std::map<std::string, std::string>& b);
std::string unified_diff(const std::map<std::string, std::string>& a,
                         const std::map<std::string, std::string>& b);

}  // namespace longhaul::llm
