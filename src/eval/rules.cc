#include "eval/rules.h"

#include <algorithm>
#include <regex>

#include "util/fs.h"

namespace longhaul {

bool plain_path(const std::string& path) {
  if (path.empty() || path[0] == '/' || path.find('\\') != std::string::npos ||
      path.find('\0') != std::string::npos)
    return false;
  size_t start = 0;
  while (true) {
    size_t end = path.find('/', start);
    std::string part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

bool editable_path(const Task& task, const std::string& path) {
  return plain_path(path) && glob_match_any(task.editable, path) && !glob_match_any(task.harness, path) &&
         path != "task.toml";
}

std::optional<std::string> check_rules(const Task& task, const Candidate& candidate) {
  for (const auto& [path, content] : candidate.files)
    if (!editable_path(task, path)) return "file '" + path + "' is not editable in this task";
  for (const auto& rule : task.forbidden) {
    // The loader has validated every pattern, so construction cannot throw here.
    std::regex re(rule.pattern, std::regex::ECMAScript);
    for (const auto& [path, content] : candidate.files) {
      std::smatch m;
      if (!std::regex_search(content, m, re)) continue;
      long line = 1 + std::count(content.begin(), content.begin() + m.position(0), '\n');
      return path + ":" + std::to_string(line) + ": forbidden pattern '" + rule.pattern + "'" +
             (rule.reason.empty() ? "" : " (" + rule.reason + ")");
    }
  }
  return std::nullopt;
}

}  // namespace longhaul
