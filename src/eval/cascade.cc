#include "eval/cascade.h"

#include <csignal>
#include <cstring>

#include "eval/rules.h"
#include "eval/workspace.h"

namespace longhaul {
namespace {

EvalResult fail(const char* outcome, const std::string& step, std::string detail) {
  EvalResult r;
  r.outcome = outcome;
  r.failed_step = step;
  r.detail = std::move(detail);
  return r;
}

std::string ending(const ProcessResult& r) {
  switch (r.end) {
    case ProcessResult::End::exited: return "exited with status " + std::to_string(r.exit_code);
    case ProcessResult::End::signaled:
      return std::string("killed by signal ") + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")";
    case ProcessResult::End::timed_out: return "timed out";
    case ProcessResult::End::cancelled: return "cancelled";
    case ProcessResult::End::failed_to_start: return "failed to start: " + r.error;
  }
  return "?";
}

// A step that did not exit 0: timeouts and crashes read the same at every step; an orderly non-zero
// exit means what the step is for (a build error, a wrong answer).
EvalResult step_failure(const Step& step, const ProcessResult& r, const char* exit_outcome,
                        double timeout_s) {
  std::string head = step.name + " " + ending(r);
  std::string complaint = trim_complaint(r);
  std::string detail = complaint.empty() ? head : head + ":\n" + complaint;
  if (r.end == ProcessResult::End::timed_out)
    return fail(outcome::timeout, step.name,
                step.name + " ran past its timeout of " + std::to_string(timeout_s) + " s");
  // A shell reports a child killed by signal N as status 128+N; harness scripts pass that on, and a
  // candidate that crashed under a harness crashed, it did not give a wrong answer.
  if (r.end == ProcessResult::End::exited && r.exit_code > 128 && r.exit_code < 128 + NSIG) {
    int sig = r.exit_code - 128;
    return fail(outcome::crashed, step.name,
                head + " (128+" + std::to_string(sig) + ": a process killed by signal " +
                    std::to_string(sig) + ", " + strsignal(sig) + ")" +
                    (complaint.empty() ? "" : ":\n" + complaint));
  }
  if (r.end == ProcessResult::End::exited) return fail(exit_outcome, step.name, detail);
  return fail(outcome::crashed, step.name, detail);
}

}  // namespace

std::string trim_complaint(const ProcessResult& r, size_t max_bytes) {
  const std::string& text = r.err.find_first_not_of(" \n\r\t") != std::string::npos ? r.err : r.out;
  std::string out;
  int lines = 0;
  size_t start = 0;
  while (start < text.size() && lines < 40) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (out.size() + (end - start) > max_bytes) {
      out += text.substr(start, max_bytes > out.size() ? max_bytes - out.size() : 0) + "...";
      break;
    }
    out += text.substr(start, end - start) + "\n";
    ++lines;
    start = end + 1;
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

ProcessResult run_step(const Task& task, const Step& step, const nlohmann::json& params,
                       const CascadeContext& ctx) {
  ProcessSpec spec;
  spec.command = step.command;
  spec.cwd = ctx.workspace;
  spec.env = step_env(task, step, params, ctx.seed);
  spec.env_remove = ctx.hidden_env;
  spec.timeout_s = step.timeout_s;
  spec.memory_bytes = size_t(task.limits.memory_mb * 1024 * 1024);
  spec.cpu_seconds = task.limits.cpu_seconds;
  spec.keep_bytes = size_t(task.limits.output_kb * 1024);
  ProcessResult r = run_process(spec, ctx.cancel);
  if (ctx.on_step && r.end != ProcessResult::End::cancelled) ctx.on_step(step, r);
  return r;
}

EvalResult bench_result(const Task& task, const ProcessResult& bench) {
  const Step& step = *task.step("bench");
  if (bench.end != ProcessResult::End::exited || bench.exit_code != 0)
    return step_failure(step, bench, outcome::crashed, step.timeout_s);
  auto metrics = parse_metrics(bench.out);
  if (!metrics) return fail(outcome::bad_output, "bench", metrics.error());
  auto it = metrics->find(task.goal.metric);
  if (it == metrics->end())
    return fail(outcome::bad_output, "bench",
                "bench printed no line {\"metric\": \"" + task.goal.metric + "\", \"value\": ...}" +
                    (bench.out.empty() ? "" : "; its output began: " + bench.out.substr(0, 200)));
  EvalResult r;
  r.outcome = outcome::ok;
  r.metrics = std::move(*metrics);
  r.goal = it->second;
  return r;
}

EvalResult run_cascade(const Task& task, const Candidate& candidate, const CascadeContext& ctx) {
  if (auto violation = check_rules(task, candidate)) return fail(outcome::rule_violation, "rules", *violation);
  auto cancelled = [](const ProcessResult& r) { return r.end == ProcessResult::End::cancelled; };

  for (const char* name : {"build", "check"}) {
    const Step* step = task.step(name);
    if (!step) continue;
    ProcessResult r = run_step(task, *step, candidate.params, ctx);
    if (cancelled(r)) return EvalResult{};
    if (r.end != ProcessResult::End::exited || r.exit_code != 0)
      return step_failure(*step, r, std::string(name) == "build" ? outcome::build_error : outcome::incorrect,
                          step->timeout_s);
  }
  ProcessResult bench = run_step(task, *task.step("bench"), candidate.params, ctx);
  if (cancelled(bench)) return EvalResult{};
  EvalResult result = bench_result(task, bench);
  if (result.outcome != outcome::ok) return result;

  // The profile informs the proposer; its failure does not make a correct, measured candidate fail.
  if (const Step* profile = task.step("profile")) {
    ProcessResult r = run_step(task, *profile, candidate.params, ctx);
    if (cancelled(r)) return EvalResult{};
    result.profile = r.out;
    if (r.end != ProcessResult::End::exited || r.exit_code != 0)
      result.profile += "\n[profile " + ending(r) + "]";
    else if (auto m = parse_metrics(r.out))
      for (auto& [name, metric] : *m) result.metrics["profile." + name] = metric;
  }
  return result;
}

}  // namespace longhaul
