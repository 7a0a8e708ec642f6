// A candidate: the full content of every editable file, plus parameter values. Its hash is the key of
// its evaluation, so the same candidate is never measured twice by accident.
// Uses: proposers build candidates; the cascade applies them to a workspace; events refer to them by
// hash and to their files by blob hash.
#pragma once
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace longhaul {

struct Candidate {
  std::map<std::string, std::string> files;  // task-relative path -> content
  nlohmann::json params = nlohmann::json::object();

  // SHA-256 of {"files": {path: sha256(content)}, "params": params} in canonical JSON.
  std::string hash() const;
  std::map<std::string, std::string> file_hashes() const;
};

}  // namespace longhaul
