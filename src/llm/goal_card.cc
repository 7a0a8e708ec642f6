// The goal card and the memory: the two runtime-written parts at the head of every request, rendered
// from the folded state only (docs/llm.md shows an example).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "llm/context.h"
#include "llm/diff.h"
#include "util/duration.h"

namespace longhaul::llm {
namespace {

std::string num(double v) { return fmt::format("{:.6g}", v); }

std::string clip(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  return s.substr(0, n) + "...";
}

std::string one_line(std::string s, size_t n) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return clip(s, n);
}

std::string metric_text(const RunState& run, double m) {
  std::string unit = run.config.value("goal", nlohmann::json::object()).value("unit", "");
  return num(m) + (unit.empty() ? "" : " " + unit);
}

std::string of_limit(double used, const std::optional<double>& limit, const std::string& used_text,
                     const std::string& limit_text, const std::string& left_text) {
  if (!limit) return used_text + " (no limit)";
  return used_text + " of " + limit_text + ", " + left_text + " left";
}

}  // namespace

std::string goal_card(const ContextInputs& in) {
  const RunState& run = in.run;
  const Transcript& t = in.transcript;
  const nlohmann::json goal = run.config.value("goal", nlohmann::json::object());
  bool minimize = run.direction == Direction::minimize;
  std::string s = "# Goal card\n";
  s += "Task: " + in.task.name + ". " + clip(in.task.description, 800) + "\n";
  s += "Metric: " + goal.value("metric", std::string("?")) + ", " + (minimize ? "minimize (lower is better)" : "maximize (higher is better)") + ".\n";
  if (run.baseline_metric) s += "Baseline: " + metric_text(run, *run.baseline_metric) + " (attempt 0, the task's own files).\n";
  if (run.best && *run.best > 0) {
    auto r = run.ratio(run.best_metric);
    s += "Best so far: " + metric_text(run, run.best_metric) + " (attempt " + std::to_string(*run.best) + ")" +
         (r ? ", " + fmt::format("{:.3f}", *r) + "x the baseline" : "") + ".\n";
  } else {
    s += "Best so far: the baseline; no candidate has beaten it yet.\n";
  }
  if (goal.contains("target") && goal["target"].is_number())
    s += "Target: " + metric_text(run, goal["target"].get<double>()) + (minimize ? " or lower" : " or higher") + ".\n";
  else if (goal.contains("target_ratio") && goal["target_ratio"].is_number())
    s += "Target: " + num(goal["target_ratio"].get<double>()) + "x the baseline.\n";
  else
    s += "Target: none set; improve as far as you can.\n";

  s += "Rules: you may write only these files: ";
  for (size_t i = 0; i < in.task.editable.size(); ++i) s += (i ? ", " : "") + in.task.editable[i];
  s += ". ";
  if (!in.task.harness.empty()) {
    s += "Read-only harness: ";
    for (size_t i = 0; i < in.task.harness.size(); ++i) s += (i ? ", " : "") + in.task.harness[i];
    s += ". ";
  }
  s += "\n";
  for (const auto& f : in.task.forbidden)
    s += "Forbidden pattern /" + f.pattern + "/: " + f.reason + ".\n";

  const AgentConfig& c = in.config;
  auto optd = [](const std::optional<int64_t>& v) { return v ? std::optional<double>(double(*v)) : std::nullopt; };
  s += "Budget used: turns " + of_limit(double(t.replies), optd(c.max_turns), std::to_string(t.replies),
                                       c.max_turns ? std::to_string(*c.max_turns) : "",
                                       c.max_turns ? std::to_string(std::max<int64_t>(0, *c.max_turns - t.replies)) : "");
  s += "; tokens " + of_limit(double(t.tokens()), optd(c.max_tokens), std::to_string(t.tokens()),
                              c.max_tokens ? std::to_string(*c.max_tokens) : "",
                              c.max_tokens ? std::to_string(std::max<int64_t>(0, *c.max_tokens - t.tokens())) : "");
  s += "; money " + of_limit(t.cost, c.max_cost, fmt::format("{:.4f}", t.cost),
                             c.max_cost ? fmt::format("{:.4f}", *c.max_cost) : "",
                             c.max_cost ? fmt::format("{:.4f}", std::max(0.0, *c.max_cost - t.cost)) : "");
  s += "; wall time " + of_limit(run.elapsed_s, run.budget.wall_time_s, format_duration(run.elapsed_s),
                                 run.budget.wall_time_s ? format_duration(*run.budget.wall_time_s) : "",
                                 run.budget.wall_time_s ? format_duration(std::max(0.0, *run.budget.wall_time_s - run.elapsed_s)) : "");
  std::optional<double> max_evals;
  if (run.budget.max_evals) max_evals = double(*run.budget.max_evals);
  s += "; evaluations " + of_limit(double(run.evaluations), max_evals, std::to_string(run.evaluations),
                                   max_evals ? std::to_string(*run.budget.max_evals) : "",
                                   max_evals ? std::to_string(std::max(0, *run.budget.max_evals - run.evaluations)) : "");
  s += ".\n";
  s += "Evaluations since the last gain: " + std::to_string(run.since_gain) + ".\n";

  if (run.since_gain >= c.stale_after) {
    s += "\n## Stalled\nNo gain in the last " + std::to_string(run.since_gain) +
         " evaluations. Directions already tried without success (do not repeat them):\n";
    std::vector<std::string> tried;
    std::set<std::string> seen;
    for (auto it = run.ledger.rbegin(); it != run.ledger.rend() && tried.size() < 12; ++it) {
      if (it->baseline() || it->crowned || it->hypothesis.empty() || !it->evaluated()) continue;
      std::string h = one_line(it->hypothesis, 160);
      if (seen.insert(h).second) tried.push_back("- " + h + " (attempt " + std::to_string(it->index) + ": " +
                                                 it->outcome + (it->metric ? " " + num(*it->metric) : "") + ")");
    }
    for (const auto& line : tried) s += line + "\n";
    if (tried.empty()) s += "- (none recorded: give every evaluate call a hypothesis)\n";
    s += "Take a structurally different approach: another algorithm, data layout or loop structure, "
         "not a variation of what is listed above.\n";
  }
  return s;
}

std::string memory(const ContextInputs& in, size_t max_bytes) {
  const RunState& run = in.run;
  size_t ledger_budget = max_bytes * 55 / 100, lessons_budget = max_bytes * 15 / 100;
  // The attempt ledger, newest rows first until its share is used, then shown oldest first.
  std::map<std::string, std::string> base;
  if (!run.ledger.empty()) base = in.blobs.files(run.ledger[0].files);
  std::vector<std::string> rows;
  size_t used = 0;
  for (auto it = run.ledger.rbegin(); it != run.ledger.rend(); ++it) {
    const Attempt& a = *it;
    std::string& change = in.blobs.change_of[a.candidate];
    if (change.empty()) {
      LineChange lc = changed_lines(base, in.blobs.files(a.files));
      change = "+" + std::to_string(lc.added) + "/-" + std::to_string(lc.removed);
    }
    std::string row = "#" + std::to_string(a.index) + " | " + (a.evaluated() ? a.outcome : "pending");
    if (a.metric) {
      row += " " + num(*a.metric);
      if (auto r = run.ratio(*a.metric)) row += fmt::format(" ({:.3f}x)", *r);
    }
    if (a.duplicate_of >= 0) row += " dup of #" + std::to_string(a.duplicate_of);
    if (a.crowned) row += " BEST";
    row += " | " + change + " lines | ";
    row += a.baseline() ? std::string("baseline") : a.hypothesis.empty() ? std::string("(no hypothesis)") : one_line(a.hypothesis, 140);
    if (a.outcome != "ok" && !a.detail.empty()) row += " | " + one_line(a.detail, 100);
    if (!a.profile.empty()) row += " | profile: " + one_line(in.blobs.get(a.profile), 80);
    if (used + row.size() + 1 > ledger_budget) break;
    used += row.size() + 1;
    rows.push_back(std::move(row));
  }
  std::string s = "# Memory (written by the runtime)\n## Attempt ledger: " + std::to_string(run.ledger.size()) +
                  " attempts";
  if (rows.size() < run.ledger.size()) s += ", the newest " + std::to_string(rows.size()) + " shown";
  s += "\n# | outcome metric (ratio to baseline) | change vs baseline | hypothesis | detail\n";
  for (auto it = rows.rbegin(); it != rows.rend(); ++it) s += *it + "\n";

  const auto& lessons = in.transcript.lessons;
  s += "## Lessons (" + std::to_string(lessons.size()) + ")\n";
  std::vector<std::string> shown;
  used = 0;
  for (auto it = lessons.rbegin(); it != lessons.rend(); ++it) {
    std::string line = "- " + one_line(*it, 300);
    if (used + line.size() + 1 > lessons_budget) break;
    used += line.size() + 1;
    shown.push_back(line);
  }
  for (auto it = shown.rbegin(); it != shown.rend(); ++it) s += *it + "\n";
  if (lessons.empty()) s += "(none yet; record what you learn with record_lesson)\n";

  if (run.best && *run.best > 0) {
    const Attempt& b = run.ledger[size_t(*run.best)];
    s += "## Best candidate (attempt " + std::to_string(b.index) + ") source\n";
    size_t left = max_bytes > s.size() ? max_bytes - s.size() : 0;
    for (const auto& [path, content] : in.blobs.files(b.files)) {
      std::string block = "=== " + path + " ===\n" + content + (content.empty() || content.back() == '\n' ? "" : "\n");
      if (block.size() > left) block = block.substr(0, left > 60 ? left - 60 : 0) + "\n[... clipped; show_best shows all]\n";
      s += block;
      left = left > block.size() ? left - block.size() : 0;
    }
  } else {
    s += "## Best candidate: the baseline (read_file shows it)\n";
  }
  return s;
}

std::string describe_attempt(const RunState& run, const Attempt& a, Blobs& blobs) {
  std::string s = "attempt " + std::to_string(a.index) + ": " + a.outcome;
  if (!a.failed_step.empty()) s += " (at " + a.failed_step + ")";
  if (a.metric) {
    s += "\n" + run.config.value("goal", nlohmann::json::object()).value("metric", std::string("metric")) +
         " = " + metric_text(run, *a.metric);
    if (run.baseline_metric)
      if (auto r = run.ratio(*a.metric)) s += fmt::format("; {:.4f}x the baseline ({})", *r, num(*run.baseline_metric));
    if (run.best) {
      const Attempt& best = run.ledger[size_t(*run.best)];
      double ratio_to_best = run.direction == Direction::minimize ? run.best_metric / *a.metric : *a.metric / run.best_metric;
      s += fmt::format("; {:.4f}x the best (attempt {}, {})", ratio_to_best, best.index, num(run.best_metric));
    }
  }
  if (a.duplicate_of >= 0) s += "\nthe same files as attempt " + std::to_string(a.duplicate_of) + ": not measured again";
  if (a.crowned) s += "\nNEW BEST";
  else if (a.outcome == "ok" && a.duplicate_of < 0) s += "\nnot better than the best";
  if (!a.detail.empty() && a.outcome != "ok") s += "\ndetail:\n" + clip(a.detail, 2000);
  if (!a.metrics.empty()) s += "\nmetrics: " + a.metrics.dump();
  if (!a.profile.empty()) s += "\nprofile:\n" + clip(blobs.get(a.profile), 1500);
  return s;
}

}  // namespace longhaul::llm
