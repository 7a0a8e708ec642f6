// Small file-system helpers with explicit errors: whole-file reads and writes, the file list of a
// folder, glob matching for task file sets. Uses: task loading, workspaces, export.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace longhaul {

Result<std::string> read_file(const std::filesystem::path& path);
// Writes via a temporary file and rename, so a reader never sees half a file.
Status write_file(const std::filesystem::path& path, std::string_view content);
// Regular files under `root`, as sorted relative paths with '/' separators.
Result<std::vector<std::string>> list_files(const std::filesystem::path& root);
// Glob over relative paths: '*' and '?' stay within one path segment, '**' spans segments.
bool glob_match(std::string_view pattern, std::string_view path);
bool glob_match_any(const std::vector<std::string>& patterns, std::string_view path);

}  // namespace longhaul
