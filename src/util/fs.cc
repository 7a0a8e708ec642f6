#include "util/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>

namespace longhaul {
namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read " + path.string()};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Status write_file(const fs::path& path, std::string_view content) {
  std::error_code ec;
  if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);
  fs::path tmp = path;
  tmp += ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot write " + path.string()};
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n <= 0) {
      ::close(fd);
      return Error{"cannot write " + path.string()};
    }
    done += size_t(n);
  }
  ::close(fd);
  fs::rename(tmp, path, ec);
  if (ec) return Error{"cannot rename " + tmp.string() + ": " + ec.message()};
  return ok_status();
}

Result<std::vector<std::string>> list_files(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, ec), end;
  if (ec) return Error{"cannot list " + root.string() + ": " + ec.message()};
  for (; it != end; it.increment(ec)) {
    if (ec) return Error{"cannot list " + root.string() + ": " + ec.message()};
    // A link to a file is listed under its own name (tasks/kda links kernels/kda's sources in):
    // fs::relative would resolve it to its target's path.
    if (it->is_regular_file()) out.push_back(it->path().lexically_relative(root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool glob_match(std::string_view pattern, std::string_view path) {
  if (pattern.empty()) return path.empty();
  if (pattern.substr(0, 2) == "**") {
    std::string_view rest = pattern.substr(2);
    if (rest.empty()) return true;
    if (rest[0] == '/') rest.remove_prefix(1);
    for (size_t i = 0; i <= path.size(); ++i)
      if ((i == 0 || path[i - 1] == '/') && glob_match(rest, path.substr(i))) return true;
    return false;
  }
  if (pattern[0] == '*') {
    for (size_t i = 0; i <= path.size(); ++i) {
      if (glob_match(pattern.substr(1), path.substr(i))) return true;
      if (i < path.size() && path[i] == '/') break;
    }
    return false;
  }
  if (path.empty()) return false;
  if (pattern[0] == '?' ? path[0] != '/' : pattern[0] == path[0])
    return glob_match(pattern.substr(1), path.substr(1));
  return false;
}

bool glob_match_any(const std::vector<std::string>& patterns, std::string_view path) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return glob_match(p, path); });
}

}  // namespace longhaul
