#include "eval/candidate.h"

#include "util/sha256.h"

namespace longhaul {

std::map<std::string, std::string> Candidate::file_hashes() const {
  std::map<std::string, std::string> out;
  for (const auto& [path, content] : files) out[path] = sha256_hex(content);
  return out;
}

std::string Candidate::hash() const {
  // nlohmann::json objects are sorted by key, so dump() is canonical.
  nlohmann::json j = {{"files", file_hashes()}, {"params", params}};
  return sha256_hex(j.dump());
}

}  // namespace longhaul
