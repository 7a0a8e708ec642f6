// The metrics protocol: a bench prints JSON lines on stdout, {"metric": NAME, "value": X} with optional
// "spread" (run-to-run noise, same unit) and "samples" (how many runs X summarises). Lines that do not
// start with '{' are ignored; one that does and is not such an object makes the output bad.
// Uses: the cascade's bench and profile steps. Protocol: docs/metrics-protocol.md.
#pragma once
#include <map>
#include <string>
#include <string_view>

#include "util/result.h"

namespace longhaul {

struct Metric {
  double value = 0;
  double spread = 0;
  int samples = 1;
};

// A metric printed twice keeps its last value. Errors quote the offending line.
Result<std::map<std::string, Metric>> parse_metrics(std::string_view out);

}  // namespace longhaul
