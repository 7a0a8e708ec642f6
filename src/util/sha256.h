// SHA-256 of a byte string, as lowercase hex. Content addresses for blobs, candidates and tasks.
#pragma once
#include <string>
#include <string_view>

namespace longhaul {

std::string sha256_hex(std::string_view data);

}  // namespace longhaul
