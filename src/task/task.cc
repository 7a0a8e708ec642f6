// The task.toml loader: walks the parsed document table by table, checks every key against the format
// in docs/task-format.md, and stops at the first mistake with its file, line and dotted key.
#include "task/task.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <regex>
#include <string_view>

#include <toml++/toml.h>

#include "search/expr.h"
#include "util/duration.h"
#include "util/fs.h"
#include "util/sha256.h"

namespace longhaul {
namespace fs = std::filesystem;

std::string TaskError::str() const {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line);
  s += ": ";
  if (!key.empty()) s += key + ": ";
  return s + message;
}

namespace {

constexpr size_t kMaxRangeValues = 100000;

// Thrown inside this file only, to unwind from the first mistake; load_task turns it into a value.
struct Fail {
  TaskError error;
};

int line_of(const toml::node& n) { return int(n.source().begin.line); }

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

std::string join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

std::string indexed(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool is_task_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  });
}

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {}

  Task load(const toml::table& root, const fs::path& dir);

 private:
  [[noreturn]] void fail(int line, std::string key, std::string message) const {
    throw Fail{TaskError{file_, line, std::move(key), std::move(message)}};
  }
  [[noreturn]] void fail(const toml::node& at, std::string key, std::string message) const {
    fail(line_of(at), std::move(key), std::move(message));
  }
  [[noreturn]] void expected(const toml::node& n, const std::string& key, const std::string& what) const {
    fail(n, key, "expected " + what + ", got " + type_name(n));
  }

  // Every key of `t` must be one of `allowed`; a stray key (often a typo) is named with its line.
  void check_keys(const toml::table& t, const std::string& path,
                  std::initializer_list<std::string_view> allowed, std::string_view what = "key") const {
    for (auto&& [k, v] : t) {
      if (std::find(allowed.begin(), allowed.end(), k.str()) != allowed.end()) continue;
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      int line = int(k.source().begin.line);
      fail(line > 0 ? line : line_of(v), join(path, k.str()),
           "unknown " + std::string(what) + " '" + std::string(k.str()) + "'; expected one of " + list);
    }
  }

  // The root table reports missing keys without a line; any other table at its own header.
  [[noreturn]] void missing(const toml::table& t, const std::string& path, std::string_view key) const {
    fail(path.empty() ? 0 : line_of(t), join(path, key), "missing required key");
  }

  const toml::table& table(const toml::node& n, const std::string& key) const {
    if (!n.is_table()) expected(n, key, "a table");
    return *n.as_table();
  }
  const toml::array& array(const toml::node& n, const std::string& key) const {
    if (!n.is_array()) expected(n, key, "an array");
    return *n.as_array();
  }
  // For [[rules.forbidden]] and [[search.param]]: a single-bracket [header] is a common slip.
  const toml::array& table_array(const toml::node& n, const std::string& key) const {
    if (n.is_table())
      fail(n, key, "expected an array of tables (write [[" + key + "]]), got a table");
    return array(n, key);
  }
  std::string string(const toml::node& n, const std::string& key) const {
    if (!n.is_string()) expected(n, key, "a string");
    return n.as_string()->get();
  }
  int64_t integer(const toml::node& n, const std::string& key) const {
    if (!n.is_integer()) expected(n, key, "an integer");
    return n.as_integer()->get();
  }
  double number(const toml::node& n, const std::string& key) const {
    double v;
    if (n.is_integer()) {
      v = double(n.as_integer()->get());
    } else if (n.is_floating_point()) {
      v = n.as_floating_point()->get();
    } else {
      expected(n, key, "a number");
    }
    if (!std::isfinite(v)) fail(n, key, "must be a finite number");
    return v;
  }
  double positive(const toml::node& n, const std::string& key) const {
    double v = number(n, key);
    if (v <= 0) fail(n, key, "must be > 0");
    return v;
  }
  int positive_int(const toml::node& n, const std::string& key) const {
    int64_t v = integer(n, key);
    if (v < 1) fail(n, key, "must be >= 1");
    if (v > INT32_MAX) fail(n, key, "must be <= " + std::to_string(INT32_MAX));
    return int(v);
  }
  // A number of seconds, or a string "500ms" "30s" "5m" "1h" "1h30m"; always > 0.
  double duration(const toml::node& n, const std::string& key) const {
    double v;
    if (n.is_string()) {
      const std::string& s = n.as_string()->get();
      std::optional<double> d = parse_duration(s);
      if (!d)
        fail(n, key,
             "bad duration '" + s + "'; expected a number of seconds or a string such as \"500ms\", "
             "\"30s\", \"5m\", \"1h30m\"");
      v = *d;
    } else if (n.is_integer() || n.is_floating_point()) {
      v = number(n, key);
    } else {
      expected(n, key, "a number of seconds or a duration string such as \"30s\"");
    }
    if (v <= 0) fail(n, key, "must be > 0");
    return v;
  }
  std::string required_string(const toml::table& t, const std::string& path, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (!n) missing(t, path, key);
    return string(*n, join(path, key));
  }
  // A non-empty array of non-empty strings, e.g. a list of globs.
  std::vector<std::string> strings(const toml::node& n, const std::string& key) const {
    std::vector<std::string> out;
    const toml::array& a = array(n, key);
    for (size_t i = 0; i < a.size(); ++i) out.push_back(string(a[i], indexed(key, i)));
    return out;
  }

  void load_goal(const toml::table& t, Goal& goal) const;
  void load_files(const toml::table& t, const fs::path& dir, Task& task) const;
  void load_rules(const toml::table& t, Task& task) const;
  void load_steps(const toml::table& t, Task& task) const;
  Step load_step(const toml::table& t, const std::string& path, std::string_view name) const;
  void load_limits(const toml::table& t, Limits& limits) const;
  void load_budget(const toml::table& t, Budget& budget) const;
  void load_search(const toml::table& t, Task& task) const;
  Param load_param(const toml::table& t, const std::string& path) const;

  std::string file_;
  std::vector<std::string> files_;  // every file in the task folder, relative, sorted
};

Task Loader::load(const toml::table& root, const fs::path& dir) {
  check_keys(root, "",
             {"name", "description", "goal", "files", "rules", "steps", "limits", "budget", "search"});
  auto listed = list_files(dir);
  if (!listed.ok()) fail(0, "", listed.error());
  files_ = std::move(*listed);

  Task task;
  task.dir = dir;
  task.name = required_string(root, "", "name");
  if (!is_task_name(task.name))
    fail(*root.get("name"), "name", "'" + task.name + "' may contain only letters, digits, '-' and '_'");
  if (const toml::node* n = root.get("description")) task.description = string(*n, "description");

  const toml::node* n = root.get("goal");
  if (!n) missing(root, "", "goal");
  load_goal(table(*n, "goal"), task.goal);

  n = root.get("files");
  if (!n) missing(root, "", "files");
  load_files(table(*n, "files"), dir, task);

  if ((n = root.get("rules"))) load_rules(table(*n, "rules"), task);

  n = root.get("steps");
  if (!n) missing(root, "", "steps");
  load_steps(table(*n, "steps"), task);

  if ((n = root.get("limits"))) load_limits(table(*n, "limits"), task.limits);
  if ((n = root.get("budget"))) load_budget(table(*n, "budget"), task.budget);
  if ((n = root.get("search"))) load_search(table(*n, "search"), task);
  return task;
}

void Loader::load_goal(const toml::table& t, Goal& goal) const {
  check_keys(t, "goal", {"metric", "direction", "unit", "target", "target_ratio"});
  goal.metric = required_string(t, "goal", "metric");
  if (goal.metric.empty()) fail(*t.get("metric"), "goal.metric", "must not be empty");
  std::string direction = required_string(t, "goal", "direction");
  if (direction == "minimize") {
    goal.direction = Direction::minimize;
  } else if (direction == "maximize") {
    goal.direction = Direction::maximize;
  } else {
    fail(*t.get("direction"), "goal.direction",
         "'" + direction + "' is not a direction; expected \"minimize\" or \"maximize\"");
  }
  if (const toml::node* n = t.get("unit")) goal.unit = string(*n, "goal.unit");
  if (const toml::node* n = t.get("target")) goal.target_value = number(*n, "goal.target");
  if (const toml::node* n = t.get("target_ratio")) {
    if (goal.target_value) fail(*n, "goal.target_ratio", "set target or target_ratio, not both");
    goal.target_ratio = number(*n, "goal.target_ratio");
    if (*goal.target_ratio <= 1) fail(*n, "goal.target_ratio", "must be > 1 (a factor of improvement)");
  }
}

void Loader::load_files(const toml::table& t, const fs::path& dir, Task& task) const {
  check_keys(t, "files", {"editable", "harness"});
  const toml::node* editable = t.get("editable");
  if (!editable) missing(t, "files", "editable");
  task.editable = strings(*editable, "files.editable");
  if (task.editable.empty()) fail(*editable, "files.editable", "must name at least one file");
  const toml::node* harness = t.get("harness");
  if (harness) task.harness = strings(*harness, "files.harness");

  // Each glob must match a file, so that a typo is caught now rather than as an empty candidate.
  auto check_matches = [&](const std::vector<std::string>& globs, const toml::node& arr,
                           const std::string& key) {
    const toml::array& a = *arr.as_array();
    for (size_t i = 0; i < globs.size(); ++i) {
      if (globs[i].empty()) fail(a[i], indexed(key, i), "must not be empty");
      bool any = std::any_of(files_.begin(), files_.end(),
                             [&](const std::string& f) { return glob_match(globs[i], f); });
      if (!any) fail(a[i], indexed(key, i), "'" + globs[i] + "' matches no file in " + dir.string());
    }
  };
  check_matches(task.editable, *editable, "files.editable");
  if (harness) check_matches(task.harness, *harness, "files.harness");

  const toml::array& ea = *editable->as_array();
  for (const std::string& f : files_) {
    for (size_t i = 0; i < task.editable.size(); ++i) {
      if (!glob_match(task.editable[i], f)) continue;
      if (f == "task.toml") fail(ea[i], indexed("files.editable", i), "task.toml may not be editable");
      for (size_t j = 0; j < task.harness.size(); ++j)
        if (glob_match(task.harness[j], f))
          fail((*harness->as_array())[j], indexed("files.harness", j),
               "'" + f + "' is both editable (by '" + task.editable[i] + "') and harness (by '" +
                   task.harness[j] + "')");
    }
  }
}

void Loader::load_rules(const toml::table& t, Task& task) const {
  check_keys(t, "rules", {"forbidden"});
  const toml::node* n = t.get("forbidden");
  if (!n) return;
  const toml::array& a = table_array(*n, "rules.forbidden");
  for (size_t i = 0; i < a.size(); ++i) {
    std::string path = indexed("rules.forbidden", i);
    const toml::table& r = table(a[i], path);
    check_keys(r, path, {"pattern", "reason"});
    ForbiddenPattern f;
    f.pattern = required_string(r, path, "pattern");
    if (f.pattern.empty()) fail(*r.get("pattern"), join(path, "pattern"), "must not be empty");
    try {
      std::regex re(f.pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      fail(*r.get("pattern"), join(path, "pattern"),
           "invalid regex '" + f.pattern + "': " + e.what());
    }
    f.reason = required_string(r, path, "reason");
    task.forbidden.push_back(std::move(f));
  }
}

void Loader::load_steps(const toml::table& t, Task& task) const {
  static constexpr std::string_view kSteps[] = {"build", "check", "bench", "profile"};
  check_keys(t, "steps", {"build", "check", "bench", "profile"}, "step");
  for (std::string_view name : kSteps) {
    std::string path = join("steps", name);
    const toml::node* n = t.get(name);
    if (!n) {
      if (name == "profile") continue;
      fail(line_of(t), path, "missing required step (build, check and bench are required)");
    }
    task.steps.push_back(load_step(table(*n, path), path, name));
  }
}

Step Loader::load_step(const toml::table& t, const std::string& path, std::string_view name) const {
  check_keys(t, path, {"command", "timeout", "env"});
  Step step;
  step.name = std::string(name);
  step.command = required_string(t, path, "command");
  if (step.command.find_first_not_of(" \t\n") == std::string::npos)
    fail(*t.get("command"), join(path, "command"), "must not be empty");
  if (const toml::node* n = t.get("timeout")) step.timeout_s = duration(*n, join(path, "timeout"));
  if (const toml::node* n = t.get("env")) {
    std::string env_path = join(path, "env");
    for (auto&& [k, v] : table(*n, env_path)) {
      std::string key = join(env_path, k.str());
      if (!is_identifier(k.str()))
        fail(v, key, "'" + std::string(k.str()) + "' is not a valid environment variable name");
      step.env[std::string(k.str())] = string(v, key);
    }
  }
  return step;
}

void Loader::load_limits(const toml::table& t, Limits& limits) const {
  check_keys(t, "limits", {"memory_mb", "cpu_seconds", "output_kb"});
  if (const toml::node* n = t.get("memory_mb")) limits.memory_mb = positive(*n, "limits.memory_mb");
  if (const toml::node* n = t.get("cpu_seconds")) limits.cpu_seconds = positive(*n, "limits.cpu_seconds");
  if (const toml::node* n = t.get("output_kb")) limits.output_kb = positive(*n, "limits.output_kb");
}

void Loader::load_budget(const toml::table& t, Budget& budget) const {
  check_keys(t, "budget", {"max_evals", "wall_time", "patience"});
  if (const toml::node* n = t.get("max_evals")) budget.max_evals = positive_int(*n, "budget.max_evals");
  if (const toml::node* n = t.get("wall_time")) budget.wall_time_s = duration(*n, "budget.wall_time");
  if (const toml::node* n = t.get("patience")) budget.patience = positive_int(*n, "budget.patience");
}

void Loader::load_search(const toml::table& t, Task& task) const {
  check_keys(t, "search", {"header", "env", "constraints", "param"});
  ParamSpace& space = task.space;
  if (const toml::node* n = t.get("header")) {
    space.header = string(*n, "search.header");
    const std::string& h = space.header;
    fs::path p(h);
    if (h.empty()) fail(*n, "search.header", "must not be empty (leave it out for no header)");
    if (p.is_absolute()) fail(*n, "search.header", "'" + h + "' must be relative to the workspace");
    for (const auto& part : p)
      if (part == "..") fail(*n, "search.header", "'" + h + "' must not contain '..'");
    if (h.back() == '/') fail(*n, "search.header", "'" + h + "' names a folder, not a file");
    if (glob_match_any(task.harness, p.lexically_normal().generic_string()))
      fail(*n, "search.header", "'" + h + "' is a harness file; the generated header may not replace it");
  }
  if (const toml::node* n = t.get("env")) {
    if (!n->is_boolean()) expected(*n, "search.env", "a boolean");
    space.env = n->as_boolean()->get();
  }

  if (const toml::node* n = t.get("param")) {
    const toml::array& a = table_array(*n, "search.param");
    for (size_t i = 0; i < a.size(); ++i) {
      std::string path = indexed("search.param", i);
      Param p = load_param(table(a[i], path), path);
      for (const Param& q : space.params)
        if (q.name == p.name)
          fail(*a[i].as_table()->get("name"), join(path, "name"),
               "duplicate parameter name '" + p.name + "'");
      space.params.push_back(std::move(p));
    }
  }

  if (const toml::node* n = t.get("constraints")) {
    space.constraints = strings(*n, "search.constraints");
    std::vector<std::string> names;
    std::vector<bool> integer;
    std::vector<int64_t> defaults;
    for (const Param& p : space.params) {
      names.push_back(p.name);
      bool is_int = p.values.front().is_number_integer();
      integer.push_back(is_int);
      defaults.push_back(is_int ? p.values[p.default_index].get<int64_t>() : 0);
    }
    const toml::array& a = *n->as_array();
    for (size_t i = 0; i < space.constraints.size(); ++i) {
      std::string key = indexed("search.constraints", i);
      auto c = Constraint::compile(space.constraints[i], names, integer);
      if (!c.ok()) fail(a[i], key, c.error());
      // The baseline runs with the default values, so they must form a valid point.
      if (!(*c)->holds(defaults)) {
        std::string vals;
        for (size_t j = 0; j < names.size(); ++j)
          if (integer[j]) vals += (vals.empty() ? "" : ", ") + names[j] + "=" + std::to_string(defaults[j]);
        fail(a[i], key, "the default values (" + vals + ") violate '" + space.constraints[i] + "'");
      }
    }
  }
}

Param Loader::load_param(const toml::table& t, const std::string& path) const {
  check_keys(t, path, {"name", "values", "range", "step", "default"});
  Param p;
  p.name = required_string(t, path, "name");
  if (!is_identifier(p.name))
    fail(*t.get("name"), join(path, "name"), "'" + p.name + "' is not a C identifier");

  const toml::node* values = t.get("values");
  const toml::node* range = t.get("range");
  const toml::node* step = t.get("step");
  if (values && range) fail(*range, join(path, "range"), "set values or range, not both");
  if (!values && !range) fail(line_of(t), path, "needs values = [...] or range = [lo, hi]");
  if (step && !range) fail(*step, join(path, "step"), "step applies only to a range");

  if (values) {
    std::string key = join(path, "values");
    const toml::array& a = array(*values, key);
    if (a.empty()) fail(*values, key, "must not be empty");
    bool ints = a[0].is_integer();
    if (!ints && !a[0].is_string()) expected(a[0], indexed(key, 0), "an integer or a string");
    for (size_t j = 0; j < a.size(); ++j) {
      std::string k = indexed(key, j);
      nlohmann::json v;
      if (ints) {
        if (a[j].is_string()) fail(a[j], k, "values mix integers and strings");
        v = integer(a[j], k);
      } else {
        if (a[j].is_integer()) fail(a[j], k, "values mix strings and integers");
        v = string(a[j], k);
      }
      if (std::find(p.values.begin(), p.values.end(), v) != p.values.end())
        fail(a[j], k, "duplicate value " + v.dump());
      p.values.push_back(std::move(v));
    }
  } else {
    std::string key = join(path, "range");
    const toml::array& a = array(*range, key);
    if (a.size() != 2) fail(*range, key, "expected [lo, hi], got " + std::to_string(a.size()) + " elements");
    int64_t lo = integer(a[0], indexed(key, 0));
    int64_t hi = integer(a[1], indexed(key, 1));
    if (lo > hi) fail(*range, key, "lo " + std::to_string(lo) + " > hi " + std::to_string(hi));
    int64_t by = 1;
    if (step) {
      by = integer(*step, join(path, "step"));
      if (by < 1) fail(*step, join(path, "step"), "must be >= 1");
    }
    uint64_t span = uint64_t(hi) - uint64_t(lo);  // exact: hi >= lo
    if (span / uint64_t(by) >= kMaxRangeValues)
      fail(*range, key, "expands to more than " + std::to_string(kMaxRangeValues) + " values");
    for (uint64_t j = 0; j <= span / uint64_t(by); ++j) p.values.push_back(int64_t(uint64_t(lo) + j * by));
  }

  if (const toml::node* d = t.get("default")) {
    std::string key = join(path, "default");
    bool ints = p.values.front().is_number_integer();
    nlohmann::json v;
    if (ints) {
      v = integer(*d, key);
    } else {
      v = string(*d, key);
    }
    auto it = std::find(p.values.begin(), p.values.end(), v);
    if (it == p.values.end()) fail(*d, key, "default " + v.dump() + " is not one of the values");
    p.default_index = size_t(it - p.values.begin());
  }
  return p;
}

// Frames one named blob for task_hash: "<len>:<name><len>:<content>", so no two sequences collide.
void frame(std::string& out, std::string_view name, std::string_view content) {
  out += std::to_string(name.size()) + ":" + std::string(name);
  out += std::to_string(content.size()) + ":" + std::string(content);
}

}  // namespace

std::variant<Task, TaskError> load_task(const fs::path& path) {
  std::error_code ec;
  fs::path file = fs::is_directory(path, ec) ? path / "task.toml" : path;
  std::string name = file.string();
  if (!fs::exists(file, ec)) {
    if (file != path) return TaskError{name, 0, "", "no task.toml in " + path.string()};
    return TaskError{name, 0, "", "no such task folder or file"};
  }
  auto text = read_file(file);
  if (!text.ok()) return TaskError{name, 0, "", text.error()};

  toml::table root;
  try {
    root = toml::parse(*text, std::string_view(name));
  } catch (const toml::parse_error& e) {
    return TaskError{name, int(e.source().begin.line), "", std::string(e.description())};
  }

  fs::path dir = fs::weakly_canonical(fs::absolute(file, ec).parent_path(), ec);
  if (ec) return TaskError{name, 0, "", "cannot resolve the task folder: " + ec.message()};
  try {
    Task task = Loader(name).load(root, dir);
    task.file = dir / file.filename();
    return task;
  } catch (const Fail& f) {
    return f.error;
  }
}

std::string task_hash(const Task& task) {
  std::string data = "longhaul-task-v1\n";
  fs::path toml_file = task.file.empty() ? task.dir / "task.toml" : task.file;
  auto toml = read_file(toml_file);
  frame(data, "task.toml", toml.ok() ? *toml : std::string());
  auto files = list_files(task.dir);
  if (files.ok()) {
    for (const std::string& f : *files) {
      if (f == "task.toml") continue;
      if (!glob_match_any(task.editable, f) && !glob_match_any(task.harness, f)) continue;
      auto content = read_file(task.dir / f);
      frame(data, f, content.ok() ? *content : "<unreadable: " + content.error() + ">");
    }
  }
  return sha256_hex(data);
}

}  // namespace longhaul
