// A task: one measurable goal over a folder of files, read from its task.toml. It names what may be
// edited, what is the read-only harness, the rules, the steps that build, check, bench and profile a
// candidate, the budget, and the parameter space the search proposer explores.
// Uses: `longhaul run` loads it; the evaluator runs its steps; the proposers read its goal and space.
// Format: docs/task-format.md.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <variant>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace longhaul {

enum class Direction { minimize, maximize };

struct Goal {
  std::string metric;        // the name a bench prints in {"metric": ..., "value": ...}
  Direction direction = Direction::minimize;
  std::string unit;          // for display only, e.g. "ms"
  // At most one of these: an absolute value, or a factor of improvement over the baseline
  // (target_ratio 4 with minimize means metric <= baseline / 4).
  std::optional<double> target_value;
  std::optional<double> target_ratio;
};

struct ForbiddenPattern {
  std::string pattern;  // ECMAScript regex, searched in every editable file
  std::string reason;
};

struct Step {
  std::string name;     // build | check | bench | profile
  std::string command;  // run by /bin/sh -c in the workspace
  double timeout_s = 60;
  std::map<std::string, std::string> env;
};

struct Limits {
  double memory_mb = 4096;    // address-space limit of each step's processes
  double cpu_seconds = 600;   // CPU-time limit of each step's processes
  double output_kb = 256;     // tail of stdout and of stderr kept per step
};

struct Budget {
  std::optional<int> max_evals;
  std::optional<double> wall_time_s;
  std::optional<int> patience;  // evaluations without a gain before stopping
};

struct Param {
  std::string name;                     // a C identifier
  std::vector<nlohmann::json> values;   // integers or strings; a range is expanded here
  size_t default_index = 0;             // the baseline's value
};

struct ParamSpace {
  std::vector<Param> params;
  std::vector<std::string> constraints;  // expressions over parameter names, e.g. "MC % MR == 0"
  std::string header;                    // workspace-relative path of a generated header, or ""
  bool env = true;                       // LONGHAUL_PARAM_<NAME> in each step's environment
  bool empty() const { return params.empty(); }
};

struct Task {
  std::filesystem::path dir;   // absolute
  std::filesystem::path file;  // absolute path of the task's toml file (usually dir/task.toml)
  std::string name;
  std::string description;
  Goal goal;
  std::vector<std::string> editable;  // globs relative to dir
  std::vector<std::string> harness;   // globs relative to dir
  std::vector<ForbiddenPattern> forbidden;
  std::vector<Step> steps;            // in cascade order: build, check, bench, then profile if any
  Limits limits;
  Budget budget;
  ParamSpace space;

  const Step* step(std::string_view name) const {
    for (const auto& s : steps)
      if (s.name == name) return &s;
    return nullptr;
  }
};

// A task.toml mistake, located: "tasks/x/task.toml:12: steps.build.timeout: expected ...".
struct TaskError {
  std::string file;
  int line = 0;      // 0 when the mistake has no line (a missing key, a missing file)
  std::string key;   // dotted path of the offending key, or ""
  std::string message;
  std::string str() const;
};

// Loads `dir`/task.toml (or the file itself if `path` names one). On error, returns the first mistake.
std::variant<Task, TaskError> load_task(const std::filesystem::path& path);

// SHA-256 over task.toml and every file the task names (editable and harness), so that resuming
// against a changed task can be refused.
std::string task_hash(const Task& task);

}  // namespace longhaul
