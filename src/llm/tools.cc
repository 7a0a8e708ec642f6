#include "llm/tools.h"

#include <algorithm>

#include "eval/rules.h"
#include "llm/diff.h"
#include "util/fs.h"

namespace longhaul::llm {
using nlohmann::json;
namespace {

json schema(json properties, std::vector<std::string> required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

struct BadArgs {
  std::string message;
};

std::string str_arg(const json& args, const std::string& name, bool required = true) {
  if (!args.contains(name)) {
    if (required) throw BadArgs{"missing argument '" + name + "'"};
    return "";
  }
  if (!args[name].is_string()) throw BadArgs{"argument '" + name + "' must be a string"};
  return args[name].get<std::string>();
}

int count_lines(const std::string& s) {
  return int(std::count(s.begin(), s.end(), '\n')) + (s.empty() || s.back() == '\n' ? 0 : 1);
}

size_t count_occurrences(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

ToolOutput fail(std::string text) { return {false, std::move(text), json::object(), false}; }
ToolOutput ok(std::string text) { return {true, std::move(text), json::object(), false}; }

std::string clip_output(std::string s, size_t max) {
  if (s.size() <= max) return s;
  std::string note = "\n[... " + std::to_string(s.size() - (max - 120)) + " more bytes clipped by the runtime]";
  s.resize(max - 120);
  return s + note;
}

ToolOutput list(ToolEnv& env) {
  const Task& task = env.lab.task();
  std::string s = "Editable (your working copy):\n";
  for (const auto& [path, hash] : env.transcript.working)
    s += "  " + path + " (" + std::to_string(count_lines(env.blobs.get(hash))) + " lines)\n";
  s += "Read-only (the harness):\n";
  auto files = list_files(task.dir);
  if (files)
    for (const auto& f : *files)
      if (glob_match_any(task.harness, f) || f == "task.toml") s += "  " + f + "\n";
  return ok(s);
}

ToolOutput read(ToolEnv& env, const json& args) {
  std::string path = str_arg(args, "path");
  if (!plain_path(path)) return fail("'" + path + "' is not a relative path inside the task");
  std::string content;
  if (auto it = env.transcript.working.find(path); it != env.transcript.working.end()) {
    content = env.blobs.get(it->second);
  } else {
    const Task& task = env.lab.task();
    if (!glob_match_any(task.harness, path) && path != "task.toml")
      return fail("no such file: '" + path + "' (list_files shows what there is)");
    auto r = read_file(task.dir / path);
    if (!r) return fail("cannot read '" + path + "': " + r.error());
    content = *r;
  }
  return ok(path + " (" + std::to_string(count_lines(content)) + " lines):\n" + content);
}

ToolOutput write_new(ToolEnv& env, const std::string& path, const std::string& content, const std::string& verb) {
  std::string before;
  if (auto it = env.transcript.working.find(path); it != env.transcript.working.end())
    before = env.blobs.get(it->second);
  LineChange c = changed_lines(before, content);
  ToolOutput out = ok(verb + " " + path + ": " + std::to_string(count_lines(content)) + " lines (+" +
                      std::to_string(c.added) + "/-" + std::to_string(c.removed) + "). evaluate to measure it.");
  out.files[path] = env.lab.put_blob(content);
  return out;
}

ToolOutput write(ToolEnv& env, const json& args) {
  std::string path = str_arg(args, "path"), content = str_arg(args, "content");
  if (!editable_path(env.lab.task(), path))
    return fail("'" + path + "' is not an editable file of this task; you may write only files the goal card lists");
  return write_new(env, path, content, "wrote");
}

ToolOutput edit(ToolEnv& env, const json& args) {
  std::string path = str_arg(args, "path"), search = str_arg(args, "search"), replace = str_arg(args, "replace");
  if (!editable_path(env.lab.task(), path))
    return fail("'" + path + "' is not an editable file of this task");
  auto it = env.transcript.working.find(path);
  if (it == env.transcript.working.end()) return fail("'" + path + "' does not exist yet: create it with write_file");
  if (search.empty()) return fail("'search' is empty: give the exact text to replace");
  std::string content = env.blobs.get(it->second);
  size_t n = count_occurrences(content, search);
  if (n == 0) return fail("the search text was not found in " + path + " (it must match exactly, whitespace included; read_file shows the file)");
  if (n > 1) return fail("the search text matches " + std::to_string(n) + " places in " + path + "; include more surrounding lines so it matches one");
  content.replace(content.find(search), search.size(), replace);
  return write_new(env, path, content, "edited");
}

ToolOutput evaluate(ToolEnv& env, const json& args, int64_t call_seq) {
  std::string hypothesis = str_arg(args, "hypothesis", false);
  Lab& lab = env.lab;
  const RunState& s = lab.state();
  int index = -1;
  if (auto it = env.transcript.attempt_of_call.find(call_seq); it != env.transcript.attempt_of_call.end()) {
    index = it->second;  // evaluated before a crash: the runner has finished it
  } else {
    if (s.budget.max_evals && s.evaluations >= *s.budget.max_evals)
      return fail("the evaluation budget is spent (" + std::to_string(*s.budget.max_evals) + " evaluations)");
    Candidate c;
    c.params = s.ledger.empty() ? json::object() : s.ledger[0].params;
    for (const auto& [path, hash] : env.transcript.working) c.files[path] = env.blobs.get(hash);
    index = lab.evaluate(c, "llm", {{"hypothesis", hypothesis}, {"tool_call", call_seq}});
  }
  const RunState& after = lab.state();
  if (index < 0 || index >= int(after.ledger.size())) return fail("the evaluation left no attempt");
  const Attempt& a = after.ledger[size_t(index)];
  ToolOutput out = ok(describe_attempt(after, a, env.blobs));
  out.ok = a.outcome == "ok";
  return out;
}

const Attempt& best_or_baseline(const RunState& s) { return s.ledger[size_t(s.best.value_or(0))]; }

ToolOutput show_best(ToolEnv& env) {
  const RunState& s = env.lab.state();
  if (s.ledger.empty()) return fail("nothing has been evaluated yet");
  const Attempt& b = best_or_baseline(s);
  auto best_files = env.blobs.files(b.files);
  std::string out = "Best: attempt " + std::to_string(b.index) + (b.baseline() ? " (the baseline)" : "") +
                    (b.metric ? ", metric " + std::to_string(*b.metric) : "") + "\n";
  for (const auto& [path, content] : best_files) out += "=== " + path + " ===\n" + content + "\n";
  std::string d = unified_diff(best_files, env.blobs.files(env.transcript.working));
  out += d.empty() ? "Your working copy is the same as the best.\n" : "Diff from the best to your working copy:\n" + d;
  return ok(out);
}

ToolOutput revert(ToolEnv& env, const json& args) {
  if (!args.contains("attempt") || !args["attempt"].is_number_integer())
    throw BadArgs{"argument 'attempt' must be an integer (an attempt number from the ledger)"};
  int i = args["attempt"].get<int>();
  const RunState& s = env.lab.state();
  if (i < 0 || i >= int(s.ledger.size()))
    return fail("there is no attempt " + std::to_string(i) + "; attempts are 0.." + std::to_string(int(s.ledger.size()) - 1));
  ToolOutput out = ok("the working copy is now attempt " + std::to_string(i) + "'s files (" +
                      std::to_string(s.ledger[size_t(i)].files.size()) + " files)");
  out.files = s.ledger[size_t(i)].files;
  out.replace = true;
  return out;
}

ToolOutput lesson(ToolEnv& env, const json& args, int64_t call_seq) {
  std::string text = str_arg(args, "text");
  if (text.empty()) return fail("the lesson is empty");
  if (!env.transcript.lesson_of_call.count(call_seq))
    env.lab.log("lesson", {{"text", text.substr(0, 2000)}, {"tool_call", call_seq}}, call_seq);
  return ok("lesson recorded; the memory carries it from now on");
}

}  // namespace

std::vector<ToolDef> tool_defs() {
  json path = {{"type", "string"}, {"description", "a path relative to the task folder"}};
  return {
      {"list_files", "List the editable files (your working copy) and the read-only harness files.", schema(json::object(), {})},
      {"read_file", "Read a file: your working copy of an editable file, or a harness file.", schema({{"path", path}}, {"path"})},
      {"write_file", "Replace the whole content of an editable file in your working copy.",
       schema({{"path", path}, {"content", {{"type", "string"}}}}, {"path", "content"})},
      {"edit_file", "Replace one exact occurrence of `search` with `replace` in an editable file. The search text must match exactly once.",
       schema({{"path", path}, {"search", {{"type", "string"}}}, {"replace", {{"type", "string"}}}}, {"path", "search", "replace"})},
      {"evaluate", "Build, check and measure your working copy. Returns the outcome, the metric and its ratio to the baseline and to the best.",
       schema({{"hypothesis", {{"type", "string"}, {"description", "one sentence: what you changed and why it should help"}}}}, {"hypothesis"})},
      {"show_best", "Show the best candidate's files and the diff from it to your working copy.", schema(json::object(), {})},
      {"revert", "Set your working copy to the files of an earlier attempt (see the ledger).",
       schema({{"attempt", {{"type", "integer"}}}}, {"attempt"})},
      {"record_lesson", "Keep a lesson (what works, what does not, and why) in the memory every request carries.",
       schema({{"text", {{"type", "string"}}}}, {"text"})},
  };
}

ToolOutput run_tool(ToolEnv& env, const ToolRecord& call, int64_t call_seq) {
  ToolOutput out;
  if (!call.error.empty()) {
    out = fail("error: " + call.error + ". Arguments received: " + call.arguments.substr(0, 300));
  } else {
    try {
      const json& a = call.args;
      if (call.name == "list_files") out = list(env);
      else if (call.name == "read_file") out = read(env, a);
      else if (call.name == "write_file") out = write(env, a);
      else if (call.name == "edit_file") out = edit(env, a);
      else if (call.name == "evaluate") out = evaluate(env, a, call_seq);
      else if (call.name == "show_best") out = show_best(env);
      else if (call.name == "revert") out = revert(env, a);
      else if (call.name == "record_lesson") out = lesson(env, a, call_seq);
      else {
        std::string names;
        for (const auto& d : tool_defs()) names += (names.empty() ? "" : ", ") + d.name;
        out = fail("error: there is no tool '" + call.name + "'; the tools are " + names);
      }
    } catch (const BadArgs& e) {
      out = fail("error: bad arguments for " + call.name + ": " + e.message);
    }
  }
  out.text = clip_output(std::move(out.text), size_t(std::max<int64_t>(200, env.config.tool_output_bytes)));
  return out;
}

}  // namespace longhaul::llm
