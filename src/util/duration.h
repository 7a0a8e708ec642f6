// Durations as people write them: "500ms", "30s", "5m", "1h30m", or a plain number of seconds.
// Uses: task.toml timeouts and budgets, CLI options, progress output.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace longhaul {

std::optional<double> parse_duration(std::string_view text);  // seconds; nullopt if malformed
std::string format_duration(double seconds);                   // "1h02m", "3m05s", "12.3s"

}  // namespace longhaul
