// The LLM proposer end to end, against the scripted OpenAI-compatible server through the real client:
// (a) the context of every logged request rebuilds byte for byte from the log; (b) a policy that edits
// the code ends with a better candidate than the baseline (sum-loop, and the default task gemm-cpu);
// (c) a fault at one call in five, each of six kinds, does not stop the run; (d) SIGKILL during a
// request and during a tool call, then resume: no gap, nothing evaluated twice; (e) the API key is in
// no file the run wrote; (f) the marathon: 1,000+ tool calls through a simulated day within the token
// budget, the goal card at the head of every request, every attempt in the ledger; (g) budgets in
// turns, tokens, money and wall time stop the run cleanly; (h) the tools: revert to any attempt, paths
// that cannot leave the task, writes only to editable files, failures and profiles as the model sees them.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "cli_testing.h"
#include "fixtures/scripted_server.h"
#include "llm/agent_config.h"
#include "llm/context.h"
#include "llm/tools.h"
#include "run/run.h"
#include "util/fs.h"

namespace longhaul::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;
using Server = ScriptedServer;

const char* kLoop =
    "  while [ \"$i\" -le \"$1\" ]; do\n"
    "    RESULT=$((RESULT + i))\n"
    "    STEPS=$((STEPS + 1))\n"
    "    i=$((i + 1))\n"
    "  done\n";
const char* kClosedForm = "  RESULT=$(( $1 * ($1 + 1) / 2 ))\n";

Task load(const fs::path& dir) { return std::get<Task>(load_task(dir)); }

llm::AgentConfig config_for(const Server& server, int64_t context_tokens = 32000) {
  llm::AgentConfig c;
  c.client.base_url = server.base_url();
  c.client.model = "scripted";
  c.client.timeout_s = 2;
  c.client.retry.base_delay_s = 0.02;
  c.client.retry.max_delay_s = 0.1;
  c.client.retry.max_total_s = 30;
  c.context_tokens = context_tokens;
  return c;
}

RunOptions llm_options(const llm::AgentConfig& c) {
  RunOptions o;
  o.proposer = "llm";
  o.proposer_config = llm::to_json(c);
  return o;
}

json call(const std::string& id, const std::string& name, const json& args) {
  return {{"id", id}, {"name", name}, {"arguments", args.dump()}};
}

ScriptedResponse reply(const json& calls, const std::string& text = "") {
  return Server::ok(Server::completion(text, calls, 1000, 50));
}

// Counts assistant messages in a request: the turn the model is at, as long as nothing was dropped.
size_t assistant_turns(const json& request) {
  size_t n = 0;
  for (const auto& m : request["messages"])
    if (m.value("role", "") == "assistant") ++n;
  return n;
}

// The improving policy, by turn: look around, botch one edit, make the real one, evaluate, learn.
ScriptedResponse improver(size_t turn) {
  std::string t = std::to_string(turn);
  switch (turn) {
    case 0: return reply(json::array({call("c0", "list_files", json::object())}), "Let me look.");
    case 1: return reply(json::array({call("c1", "read_file", {{"path", "sum.sh"}})}));
    case 2: return reply(json::array({call("c2", "edit_file", {{"path", "sum.sh"}, {"search", "RESULT"}, {"replace", "R"}}),
                                      call("c3", "write_file", {{"path", "harness.sh"}, {"content", "exit 0"}})}));
    case 3: return reply(json::array({call("c4", "edit_file", {{"path", "sum.sh"}, {"search", kLoop}, {"replace", kClosedForm}}),
                                      call("c5", "evaluate", {{"hypothesis", "the closed form n(n+1)/2 replaces the loop"}})}));
    case 4: return reply(json::array({call("c6", "record_lesson", {{"text", "closed forms beat loops"}}),
                                      call("c7", "show_best", json::object())}));
    default:
      if (turn % 2) return reply(json::array({call("c" + t, "read_file", {{"path", "harness.sh"}}),
                                              call("d" + t, "read_file", {{"path", "sum.sh"}})}));
      return reply(json::array({call("c" + t, "evaluate", {{"hypothesis", "measure again"}})}));
  }
}

std::vector<Event> events_of(const fs::path& run) { return read_events(run); }

// (a) Every request's context, rebuilt from the log prefix before it, is the bytes that were sent.
void expect_contexts_rebuild(const fs::path& run, const Task& task, const std::vector<ReceivedRequest>* sent) {
  auto events = events_of(run);
  auto store = EventStore::open(run / "run.db", true);
  ASSERT_TRUE(store.ok());
  RunState state = fold({events.front()});
  auto config = llm::agent_config_from_json(state.config["proposer_config"]);
  ASSERT_TRUE(config.ok()) << config.error();
  config->client.tools = llm::tool_defs();
  llm::ChatClient client(config->client);
  llm::Blobs blobs([&](const std::string& h) { return *(*store)->get_blob(h); });
  RunState s;
  llm::Transcript t;
  size_t checked = 0;
  std::set<std::string> sent_bodies;
  if (sent) {
    for (const auto& r : *sent) sent_bodies.insert(r.body);
  }
  for (const auto& e : events) {
    if (e.type == "llm_request" && !e.payload.contains("reissue_of")) {
      std::string logged = *(*store)->get_blob(e.payload["context"].get<std::string>());
      llm::ContextInputs in{s, task, *config, t, client, blobs};
      llm::Rendered r = llm::render(in);
      ASSERT_EQ(r.body, logged) << "request at seq " << e.seq;
      if (sent) {
        EXPECT_TRUE(sent_bodies.count(logged)) << "the logged context was not what was sent, seq " << e.seq;
      }
      ++checked;
    }
    s.apply(e);
    t.apply(e);
  }
  EXPECT_GT(checked, 3u);
}

TEST(AgentContext, RebuiltFromTheLogIsByteIdentical) {
  Server server([](const json& req, size_t) { return improver(assistant_turns(req)); });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server, /*context_tokens=*/3000);  // small: compactions happen
  c.max_turns = 14;
  fs::path run = fresh_dir("agent-rebuild");
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  int compactions = 0;
  for (const auto& e : events_of(run)) compactions += e.type == "compaction";
  EXPECT_GT(compactions, 0) << "the budget should have forced a compaction";
  auto sent = server.requests();
  expect_contexts_rebuild(run, task, &sent);
}

TEST(AgentRun, RealEditsBeatTheBaseline) {
  Server server([](const json& req, size_t) { return improver(assistant_turns(req)); });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server);
  c.max_turns = 6;
  fs::path run = fresh_dir("agent-improve");
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  const RunState& s = end.state;
  EXPECT_EQ(s.stop_reason, "max_turns");
  ASSERT_TRUE(s.best.has_value());
  EXPECT_GT(*s.best, 0);
  EXPECT_EQ(*s.baseline_metric, 201);
  EXPECT_EQ(s.best_metric, 1);
  EXPECT_EQ(s.ledger[size_t(*s.best)].hypothesis, "the closed form n(n+1)/2 replaces the loop");
  // What the model was told: the botched edit, the refused harness write, the new best.
  auto reqs = server.requests();
  std::string last = reqs.back().body;
  EXPECT_NE(last.find("matches"), std::string::npos);
  EXPECT_NE(last.find("not an editable file"), std::string::npos);
  EXPECT_NE(last.find("NEW BEST"), std::string::npos);
  EXPECT_NE(last.find("closed forms beat loops"), std::string::npos) << "lesson in the memory";
  for (const auto& r : reqs) {
    ASSERT_GE(r.json["messages"].size(), 2u);
    EXPECT_EQ(r.json["messages"][1]["content"].get<std::string>().rfind("# Goal card", 0), 0u);
  }
  // The card of the last request names the goal in words, the metric and direction, the baseline, the
  // best and its ratio, the target, the rules and the budget used and left.
  std::string card = reqs.back().json["messages"][1]["content"];
  for (const char* says : {"Task: sum-loop. Make sum_to in sum.sh compute", "Metric: steps, minimize",
                           "Baseline: 201 (attempt 0", "Best so far: 1 (attempt 1), 201.000x the baseline",
                           "Target: none set", "Rules: you may write only these files: sum.sh",
                           "Read-only harness: harness.sh", "Forbidden pattern /\\bbc\\b/: no external calculators",
                           "Budget used: turns 5 of 6, 1 left; tokens 5250 (no limit); money 0.0000 (no limit); wall time ",
                           "evaluations 2 of 100, 98 left"})
    EXPECT_NE(card.find(says), std::string::npos) << says << "\n" << card;
}

// (b) on the default task: the policy reads gemm.cc through the tools, then edits it so that the kernel
// uses known-good blocking, a register tile that fills the vector registers and packing (defines
// placed after the generated params.h, which carries the baseline's values), evaluates, then adds a
// second thread and evaluates again. The cascade builds, checks and benches each edit for real.
// Three evaluations (baseline and two edits) plus the end-of-session confirmation: ~10-20 s.

// The text of the newest tool result in a request whose content starts with `prefix`, or "".
std::string tool_output(const json& request, const std::string& prefix) {
  const auto& msgs = request["messages"];
  for (auto it = msgs.rbegin(); it != msgs.rend(); ++it)
    if (it->value("role", "") == "tool" && (*it)["content"].is_string()) {
      std::string c = (*it)["content"].get<std::string>();
      if (c.rfind(prefix, 0) == 0) return c;
    }
  return "";
}

const char* kTuned =
    "// Tuned: a 6 x 32 register tile (12 AVX-512 accumulators; 24 AVX2 ones), KC 256 so the B micro-panel\n"
    "// (32 KiB) stays in L1, MC 96 so the A block stays in L2, both operands packed.\n"
    "#undef MC\n#define MC 96\n#undef KC\n#define KC 256\n#undef NC\n#define NC 1024\n"
    "#undef MR\n#define MR 6\n#undef NR\n#define NR 32\n#undef KU\n#define KU 4\n"
    "#undef PACK\n#define PACK 2\n#undef ORDER\n#define ORDER 0\n#undef THREADS\n#define THREADS 1\n";

ScriptedResponse gemm_tuner(const json& req) {
  switch (assistant_turns(req)) {
    case 0: return reply(json::array({call("g0", "read_file", {{"path", "gemm.cc"}})}), "First, the kernel.");
    case 1: {
      // Edit what was read: the include of params.h is the anchor; it must be in the file as read.
      std::string src = tool_output(req, "gemm.cc (");
      const std::string anchor = "#include \"params.h\"\n#endif\n";
      if (src.find(anchor) == std::string::npos) return reply(json::array(), "gemm.cc did not come back");
      return reply(json::array({call("g1", "edit_file", {{"path", "gemm.cc"}, {"search", anchor},
                                                         {"replace", anchor + kTuned}}),
                                call("g2", "evaluate", {{"hypothesis", "6x32 register tile, KC 256, MC 96, packed A and B"}})}));
    }
    case 2:
      return reply(json::array({call("g3", "edit_file", {{"path", "gemm.cc"}, {"search", "#undef THREADS\n#define THREADS 1\n"},
                                                         {"replace", "#undef THREADS\n#define THREADS 2\n"}}),
                                call("g4", "evaluate", {{"hypothesis", "two threads, each on half of the rows of C"}})}));
    default: return reply(json::array({call("g5", "show_best", json::object())}));
  }
}

TEST(AgentRun, GemmCpuImprovedByRealEdits) {
  Server server([](const json& req, size_t) { return gemm_tuner(req); });
  Task task = load(fs::path(LONGHAUL_SOURCE_DIR) / "tasks" / "gemm-cpu");
  auto c = config_for(server);
  c.max_turns = 4;
  fs::path run = fresh_dir("agent-gemm");
  auto t0 = std::chrono::steady_clock::now();
  RunEnd end = start_run(task, run, llm_options(c));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(end.exit_code, 0) << end.message;
  const RunState& s = end.state;
  EXPECT_EQ(s.stop_reason, "max_turns");
  EXPECT_EQ(s.evaluations, 3) << "the baseline and two edits";
  ASSERT_EQ(s.ledger.size(), 3u);
  for (const auto& a : s.ledger) EXPECT_EQ(a.outcome, "ok") << "attempt " << a.index << ": " << a.detail;
  ASSERT_TRUE(s.best.has_value());
  ASSERT_GE(*s.best, 1) << "an edit must beat the baseline";
  const Attempt& best = s.ledger[size_t(*s.best)];
  EXPECT_EQ(best.strategy, "llm");
  ASSERT_TRUE(s.baseline_metric.has_value());
  auto ratio = s.ratio(s.best_metric);
  ASSERT_TRUE(ratio.has_value());
  EXPECT_GT(*ratio, 1.5) << "baseline " << *s.baseline_metric << " ms, best " << s.best_metric << " ms";
  if (s.confirmed_ratio) {
    EXPECT_GT(*s.confirmed_ratio, 1.5) << "measured side by side with the baseline";
  }
  // The best's files are not the baseline's, and the difference is the edit made through the tools.
  EXPECT_NE(best.files, s.ledger[0].files);
  auto store = EventStore::open(run / "run.db", true);
  ASSERT_TRUE(store.ok());
  std::string best_src = *(*store)->get_blob(best.files.at("gemm.cc"));
  std::string base_src = *(*store)->get_blob(s.ledger[0].files.at("gemm.cc"));
  EXPECT_NE(best_src, base_src);
  EXPECT_NE(best_src.find("#define MR 6\n"), std::string::npos);
  EXPECT_EQ(base_src.find("#define MR 6\n"), std::string::npos);
  // The model was told: the evaluate results name the new best.
  std::string last = server.requests().back().body;
  EXPECT_NE(last.find("NEW BEST"), std::string::npos);
  RecordProperty("ratio", std::to_string(*ratio));
  RecordProperty("seconds", std::to_string(secs));
  std::printf("gemm-cpu by the scripted agent: baseline %.3f ms, best %.3f ms (attempt %d), %.2fx; "
              "confirmed %s; %.1f s\n", *s.baseline_metric, s.best_metric, *s.best, *ratio,
              s.confirmed_ratio ? std::to_string(*s.confirmed_ratio).c_str() : "-", secs);
}

// A cycle of honest actions for long runs: read, edit a comment line (so candidates differ), evaluate.
ScriptedResponse worker(size_t n, int64_t k) {
  std::string id = "w" + std::to_string(k);
  json calls = json::array({call(id + "r", "read_file", {{"path", "sum.sh"}}),
                            call(id + "w", "write_file", {{"path", "sum.sh"},
                                                           {"content", "# variant " + std::to_string(k) + "\n" + std::string(
                                                               "sum_to() {\n  RESULT=0\n  STEPS=" + std::to_string(2 + k % 5) +
                                                               "\n  i=1\n") + kLoop + "}\n"}}),
                            call(id + "e", "evaluate", {{"hypothesis", "variant " + std::to_string(k) + ": start STEPS at " +
                                                                          std::to_string(2 + k % 5)}})});
  return reply(calls);
}

// The content of the tool message answering call `id` in a request, or "" when it has none.
std::string tool_message(const json& request, const std::string& id) {
  for (const auto& m : request["messages"])
    if (m.value("role", "") == "tool" && m.value("tool_call_id", "") == id && m["content"].is_string())
      return m["content"].get<std::string>();
  return "";
}

// (c) One call in five is a fault, the six kinds in turn (so each is injected, at least twice): 429,
// 500, a hang past the client's timeout, a reply cut off mid-JSON, a call of a tool that does not
// exist, calls with invalid arguments. Each leaves its own mark, and the run goes on to its budget.
TEST(AgentFaults, EveryFifthCallFaultyAndTheRunCompletes) {
  const std::vector<std::string> kinds = {"429", "500", "hang", "truncated", "unknown_tool", "bad_args"};
  std::mutex mu;
  std::map<size_t, std::string> fault_at;  // request index -> kind
  Server server([&](const json& req, size_t i) -> ScriptedResponse {
    if (i % 5 != 4) return worker(assistant_turns(req), int64_t(i));
    const std::string kind = kinds[(i / 5) % kinds.size()];
    {
      std::lock_guard<std::mutex> lock(mu);
      fault_at[i] = kind;
    }
    const std::string n = std::to_string(i);
    if (kind == "429") return Server::status(429, {{"error", {{"message", "slow down"}}}}, {{"Retry-After", "0"}});
    if (kind == "500") return Server::status(500, {{"error", {{"message", "boom"}}}});
    if (kind == "hang") {
      ScriptedResponse r = worker(0, int64_t(i));
      r.delay_s = 3;  // the client's timeout is 1 s
      return r;
    }
    if (kind == "truncated") {
      ScriptedResponse r = worker(0, int64_t(i));
      r.truncate_at = long(r.body.size() / 2);
      return r;
    }
    if (kind == "unknown_tool") return reply(json::array({call("u" + n, "launch_rockets", json::object())}));
    return reply(json::array({{{"id", "b" + n}, {"name", "edit_file"}, {"arguments", "{\"path\": \"sum.sh\", "}},
                              call("p" + n, "read_file", {{"path", 42}}),
                              call("m" + n, "write_file", {{"path", "sum.sh"}})}));
  });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server, 8000);
  c.client.timeout_s = 1;
  c.max_turns = 56;
  fs::path run = fresh_dir("agent-faults");
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  EXPECT_GT(end.state.evaluations, 30);

  std::lock_guard<std::mutex> lock(mu);
  auto reqs = server.requests();
  std::map<std::string, int> injected;
  for (const auto& [i, kind] : fault_at) ++injected[kind];
  for (const auto& kind : kinds) EXPECT_GE(injected[kind], 2) << kind << " injected";
  EXPECT_EQ(fault_at.size(), reqs.size() / 5) << "one request in five";
  for (const auto& [i, kind] : fault_at) {
    ASSERT_LT(i + 1, reqs.size()) << "the run ended on a fault";
    const ReceivedRequest& next = reqs[i + 1];
    const std::string n = std::to_string(i);
    if (kind == "429" || kind == "500" || kind == "hang") {
      EXPECT_EQ(next.body, reqs[i].body) << kind << " at " << i << ": the client sends the same request again";
    } else if (kind == "truncated") {
      EXPECT_NE(next.body.find("Your last reply could not be used"), std::string::npos) << i;
    } else if (kind == "unknown_tool") {
      EXPECT_EQ(tool_message(next.json, "u" + n).rfind("error: there is no tool 'launch_rockets'", 0), 0u) << i;
    } else {
      EXPECT_EQ(tool_message(next.json, "b" + n).rfind("error: ", 0), 0u) << i;
      EXPECT_NE(tool_message(next.json, "p" + n).find("argument 'path' must be a string"), std::string::npos) << i;
      EXPECT_NE(tool_message(next.json, "m" + n).find("missing argument 'content'"), std::string::npos) << i;
    }
  }
  int retried = 0, malformed = 0;
  for (const auto& e : events_of(run)) {
    if (e.type == "llm_reply") retried += e.payload.value("attempts", 1) == 2;
    if (e.type == "llm_error") malformed += e.payload.value("kind", "") == "malformed";
  }
  EXPECT_EQ(retried, injected["429"] + injected["500"] + injected["hang"]) << "replies that took a second attempt";
  EXPECT_EQ(malformed, injected["truncated"]);
  expect_contexts_rebuild(run, task, nullptr);
}

// A run of sum-loop against `server`, with the tests' client settings, for `max_turns` turns.
RunEnd run_sum_loop(const Server& server, int64_t max_turns, const fs::path& run) {
  auto c = config_for(server);
  c.max_turns = max_turns;
  return start_run(load(fixture("tasks/sum-loop")), run, llm_options(c));
}

// OpenAI's answer to a prompt that does not fit.
ScriptedResponse too_long() {
  return Server::status(400, {{"error", {{"message", "This model's maximum context length is 4096 tokens"},
                                         {"code", "context_length_exceeded"}}}});
}

TEST(AgentFaults, ContextLengthErrorCompactsAndAsksAgain) {
  Server server([](const json& req, size_t i) -> ScriptedResponse {
    if (i == 6) return too_long();
    return worker(assistant_turns(req), int64_t(i));
  });
  Task task = load(fixture("tasks/sum-loop"));
  fs::path run = fresh_dir("agent-context-length");
  RunEnd end = run_sum_loop(server, 8, run);
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  auto events = events_of(run);
  bool compacted_after_error = false;
  for (size_t i = 0; i + 1 < events.size(); ++i)
    if (events[i].type == "llm_error" && events[i].payload.value("kind", "") == "context_length")
      compacted_after_error = events[i + 1].type == "compaction" &&
                              events[i + 1].payload.value("reason", "") == "context_length";
  EXPECT_TRUE(compacted_after_error);
  auto reqs = server.requests();
  ASSERT_GT(reqs.size(), 7u);
  EXPECT_LT(reqs[7].body.size(), reqs[6].body.size()) << "the request after the error is smaller";
  expect_contexts_rebuild(run, task, nullptr);
}

// A server that keeps saying the prompt is too long: each error compacts further and asks again, three
// times at most; then the run stops (llm_error), resumable, having sent no request it did not log.
TEST(AgentFaults, ContextLengthErrorsThatPersistStopTheRunResumably) {
  std::atomic<bool> recovered{false};
  Server server([&](const json& req, size_t i) -> ScriptedResponse {
    if (!recovered && i >= 4) return too_long();  // from the fifth request on, until the server recovers
    return worker(assistant_turns(req), int64_t(i));
  });
  Task task = load(fixture("tasks/sum-loop"));
  fs::path run = fresh_dir("agent-context-length-persists");
  RunEnd end = run_sum_loop(server, 10, run);
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "llm_error");
  int errors = 0, forced = 0, requests = 0;
  for (const auto& e : events_of(run)) {
    errors += e.type == "llm_error" && e.payload.value("kind", "") == "context_length";
    forced += e.type == "compaction" && e.payload.value("reason", "") == "context_length";
    requests += e.type == "llm_request";
  }
  EXPECT_GE(errors, 2);
  EXPECT_LE(errors, 4) << "the first error and three retries at most";
  EXPECT_EQ(forced, errors - 1) << "a compaction before each retry";
  EXPECT_EQ(size_t(requests), server.request_count()) << "every request sent was logged";
  auto reqs = server.requests();
  for (size_t i = 5; i < reqs.size(); ++i) EXPECT_LT(reqs[i].body.size(), reqs[i - 1].body.size()) << i;
  recovered = true;
  end = resume_run(run, RunOptions{});
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  reqs = server.requests();
  expect_contexts_rebuild(run, task, &reqs);
}

TEST(AgentFaults, ClientGivingUpStopsTheRunResumably) {
  std::atomic<bool> down{false};
  Server server([&](const json& req, size_t) -> ScriptedResponse {
    if (down) return Server::status(503, {{"error", {{"message", "overloaded"}}}});
    return worker(assistant_turns(req), int64_t(assistant_turns(req)));
  });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server);
  c.client.retry.max_attempts = 3;
  c.max_turns = 5;
  fs::path run = fresh_dir("agent-gives-up");
  down = true;
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "llm_error");
  EXPECT_EQ(server.request_count(), 3u) << "three attempts, then the client gave up";
  down = false;
  end = resume_run(run, RunOptions{});
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  EXPECT_EQ(end.state.ledger.size(), 6u);
}

// (g) Each budget of the agent's (turns, tokens, money) and the run's wall time stops the run cleanly at
// the first turn boundary at or past it: exit 0, a `stopped` event with the budget's name, the goal
// card counting it down on the way. A resume with nothing more to spend stops again without a request.
// Every reply reports 1000 prompt and 50 completion tokens; each turn takes a simulated 10 minutes.
TEST(AgentBudgets, TurnsTokensMoneyAndWallTimeStopTheRunCleanly) {
  struct Case {
    std::string reason;
    std::function<void(llm::AgentConfig&, RunOptions&)> set;
    int replies;
    std::string second_card;  // what the card of the second request says of the budget
  };
  std::vector<Case> cases = {
      {"max_turns", [](llm::AgentConfig& c, RunOptions&) { c.max_turns = 3; }, 3, "turns 1 of 3, 2 left"},
      {"max_tokens", [](llm::AgentConfig& c, RunOptions&) { c.max_tokens = 3000; }, 3,
       "tokens 1050 of 3000, 1950 left"},
      {"max_cost",
       [](llm::AgentConfig& c, RunOptions&) {
         c.client.price_input_per_mtok = 100;   // 0.1 a reply
         c.client.price_output_per_mtok = 200;  // 0.01 a reply
         c.max_cost = 0.5;
       },
       5, "money 0.1100 of 0.5000, 0.3900 left"},
      {"wall_time", [](llm::AgentConfig&, RunOptions& o) { o.budget.wall_time_s = 1800; }, 3,
       "wall time 10m00s of 30m00s, 20m00s left"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.reason);
    std::atomic<double> now{1.7e9};
    Server server([&](const json& req, size_t i) {
      now = now + 600.0;
      return worker(assistant_turns(req), int64_t(i));
    });
    Task task = load(fixture("tasks/sum-loop"));
    auto c = config_for(server);
    RunOptions o;
    o.clock = [&] { return now.load(); };
    k.set(c, o);
    RunOptions run_options = llm_options(c);
    run_options.clock = o.clock;
    run_options.budget = o.budget;
    fs::path run = fresh_dir("agent-budget-" + k.reason);
    RunEnd end = start_run(task, run, run_options);
    ASSERT_EQ(end.exit_code, 0) << end.message;
    EXPECT_EQ(end.state.stop_reason, k.reason);
    int replies = 0;
    for (const auto& e : events_of(run)) replies += e.type == "llm_reply";
    EXPECT_EQ(replies, k.replies);
    auto reqs = server.requests();
    ASSERT_EQ(reqs.size(), size_t(k.replies));
    std::string card = reqs[1].json["messages"][1]["content"];
    EXPECT_NE(card.find(k.second_card), std::string::npos) << card;
    auto events = events_of(run);
    ASSERT_EQ(events.back().type, "stopped");
    EXPECT_EQ(events.back().payload.value("reason", ""), k.reason);

    RunOptions again;
    again.clock = o.clock;
    end = resume_run(run, again);
    ASSERT_EQ(end.exit_code, 0) << end.message;
    EXPECT_EQ(end.state.stop_reason, k.reason);
    EXPECT_EQ(server.request_count(), size_t(k.replies)) << "nothing left to spend: no request";
  }
}

// The outcome and text of every tool call of a run, by the id the model gave it.
std::map<std::string, std::pair<bool, std::string>> tool_results_by_id(const fs::path& run) {
  auto events = events_of(run);
  auto store = EventStore::open(run / "run.db", true);
  std::map<int64_t, std::string> id_of;
  std::map<std::string, std::pair<bool, std::string>> out;
  for (const auto& e : events) {
    if (e.type == "tool_call") id_of[e.seq] = e.payload.value("id", "");
    if (e.type == "tool_result")
      out[id_of[e.parent]] = {e.payload.value("ok", false), *(*store)->get_blob(e.payload.value("result", ""))};
  }
  return out;
}

const char* kClosedFormFile = "sum_to() {\n  RESULT=$(( $1 * ($1 + 1) / 2 ))\n  STEPS=1\n}\n";

// (h) The tools as the model uses them, on sum-loop with a profile step: a new best with its profile; a
// build error with the compiler's complaint; a search text that is not there; revert to the baseline, to
// a failed attempt and to the best, each then evaluated (and found to be that attempt's very files);
// paths that try to leave the task or write the harness; the read-only files that may be read.
TEST(AgentTools, RevertPathsFailuresAndProfilesAsTheModelSeesThem) {
  fs::path task_dir = fresh_dir("agent-tools-task");
  fs::copy(fixture("tasks/sum-loop"), task_dir, fs::copy_options::recursive);
  {
    std::string h = *read_file(task_dir / "harness.sh");
    h.replace(h.find("esac"), 4, "  profile)\n    sum_to 200\n    echo \"hot spot: the loop ran $((STEPS - 1)) times\" ;;\nesac");
    ASSERT_TRUE(write_file(task_dir / "harness.sh", h).ok());
    std::ofstream(task_dir / "task.toml", std::ios::app) << "\n[steps.profile]\ncommand = \"sh harness.sh profile\"\ntimeout = \"10s\"\n";
  }
  auto a = [](std::string id, std::string name, json args) { return call(id, name, args); };
  Server server([&](const json& req, size_t) -> ScriptedResponse {
    switch (assistant_turns(req)) {
      case 0: return reply(json::array({a("w", "write_file", {{"path", "sum.sh"}, {"content", kClosedFormFile}}),
                                        a("e1", "evaluate", {{"hypothesis", "closed form"}})}));
      case 1: return reply(json::array({a("nf", "edit_file", {{"path", "sum.sh"}, {"search", "while"}, {"replace", "until"}}),
                                        a("br", "edit_file", {{"path", "sum.sh"}, {"search", "  STEPS=1\n"}, {"replace", "  STEPS=1\n  if then\n"}}),
                                        a("e2", "evaluate", {{"hypothesis", "broken on purpose"}})}));
      case 2: return reply(json::array({a("r0", "revert", {{"attempt", 0}}), a("e3", "evaluate", {{"hypothesis", "the baseline again"}})}));
      case 3: return reply(json::array({a("r2", "revert", {{"attempt", 2}}), a("e4", "evaluate", {{"hypothesis", "the broken one again"}}),
                                        a("r1", "revert", {{"attempt", 1}}), a("e5", "evaluate", {{"hypothesis", "the best again"}}),
                                        a("sb", "show_best", json::object())}));
      case 4: return reply(json::array({
          a("x1", "read_file", {{"path", "../sum-loop/sum.sh"}}), a("x2", "read_file", {{"path", "/etc/passwd"}}),
          a("x3", "read_file", {{"path", "sum.sh/../harness.sh"}}), a("x4", "read_file", {{"path", "nothere.sh"}}),
          a("x5", "write_file", {{"path", "harness.sh"}, {"content", "exit 0"}}),
          a("x6", "write_file", {{"path", "task.toml"}, {"content", ""}}),
          a("x7", "write_file", {{"path", "../escape.sh"}, {"content", "x"}}),
          a("x8", "write_file", {{"path", "/tmp/escape.sh"}, {"content", "x"}}),
          a("x9", "write_file", {{"path", "./sum.sh"}, {"content", "x"}}),
          a("xa", "edit_file", {{"path", "harness.sh"}, {"search", "check"}, {"replace", "skip"}}),
          a("xb", "revert", {{"attempt", 99}}), a("xc", "revert", {{"attempt", "1"}})}));
      default: return reply(json::array({a("h", "read_file", {{"path", "harness.sh"}}), a("t", "read_file", {{"path", "task.toml"}}),
                                         a("l", "list_files", json::object())}));
    }
  });
  Task task = load(task_dir);
  auto c = config_for(server);
  c.max_turns = 6;
  fs::path run = fresh_dir("agent-tools-run");
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  const std::vector<Attempt>& ledger = end.state.ledger;
  ASSERT_EQ(ledger.size(), 6u);
  auto r = tool_results_by_id(run);
  ASSERT_EQ(r.size(), 27u);

  EXPECT_EQ(ledger[1].outcome, "ok");
  EXPECT_TRUE(ledger[1].crowned);
  EXPECT_TRUE(r["e1"].first);
  EXPECT_NE(r["e1"].second.find("NEW BEST"), std::string::npos) << r["e1"].second;
  EXPECT_NE(r["e1"].second.find("profile:\nhot spot: the loop ran 0 times"), std::string::npos) << r["e1"].second;
  EXPECT_FALSE(r["nf"].first);
  EXPECT_NE(r["nf"].second.find("was not found"), std::string::npos) << r["nf"].second;
  EXPECT_EQ(ledger[2].outcome, "build_error");
  EXPECT_FALSE(r["e2"].first);
  EXPECT_NE(r["e2"].second.find("build_error (at build)"), std::string::npos) << r["e2"].second;
  EXPECT_NE(r["e2"].second.find("Syntax error"), std::string::npos) << "the shell's complaint: " << r["e2"].second;
  // Reverted and evaluated: the same files as the attempt named, so the ledger answers from it.
  EXPECT_EQ(ledger[3].duplicate_of, 0);
  EXPECT_EQ(ledger[4].duplicate_of, 2);
  EXPECT_EQ(ledger[5].duplicate_of, 1);
  for (int i : {3, 4, 5}) EXPECT_EQ(ledger[size_t(i)].files, ledger[size_t(ledger[size_t(i)].duplicate_of)].files) << i;
  for (const char* id : {"r0", "r1", "r2"}) EXPECT_TRUE(r[id].first) << id << ": " << r[id].second;
  EXPECT_NE(r["sb"].second.find("Your working copy is the same as the best."), std::string::npos) << r["sb"].second;

  const std::map<std::string, std::string> refused = {
      {"x1", "is not a relative path inside the task"}, {"x2", "is not a relative path inside the task"},
      {"x3", "is not a relative path inside the task"}, {"x4", "no such file"},
      {"x5", "is not an editable file"}, {"x6", "is not an editable file"}, {"x7", "is not an editable file"},
      {"x8", "is not an editable file"}, {"x9", "is not an editable file"}, {"xa", "is not an editable file"},
      {"xb", "there is no attempt 99"}, {"xc", "must be an integer"}};
  for (const auto& [id, says] : refused) {
    EXPECT_FALSE(r[id].first) << id;
    EXPECT_NE(r[id].second.find(says), std::string::npos) << id << ": " << r[id].second;
  }
  EXPECT_FALSE(fs::exists(task_dir.parent_path() / "escape.sh"));
  EXPECT_TRUE(r["h"].first);
  EXPECT_NE(r["h"].second.find("hot spot"), std::string::npos) << "the harness may be read";
  EXPECT_TRUE(r["t"].first);
  EXPECT_NE(r["l"].second.find("harness.sh"), std::string::npos);
  // Only the editable file was ever in the working copy, and the harness on disk is untouched.
  llm::Transcript t = llm::fold_transcript(events_of(run));
  EXPECT_EQ(t.working.size(), 1u);
  EXPECT_EQ(t.working.count("sum.sh"), 1u);
  EXPECT_NE(read_file(task_dir / "harness.sh")->find("hot spot"), std::string::npos);
  // The memory's ledger row of the best carries its profile's first line.
  std::string last = server.requests().back().json["messages"][1]["content"];
  EXPECT_NE(last.find("profile: hot spot: the loop ran 0 times"), std::string::npos) << last;
}

TEST(AgentCli, UsageErrorsNameTheProblem) {
  fs::path dir = fresh_dir("agent-cli");
  fs::create_directories(dir);
  std::ofstream(dir / "bad.toml") << "[llm]\nmodel = \"m\"\napi_key = \"sk-x\"\n";
  std::ofstream(dir / "nomodel.toml") << "[llm]\nbase_url = \"http://x/v1\"\n";
  std::ofstream(dir / "unknown.toml") << "[llm]\nmodel = \"m\"\n[agent]\ncontext = 5\n";
  std::ofstream(dir / "keyasname.toml") << "[llm]\nmodel = \"m\"\napi_key_env = \"sk-live-1234\"\n";
  std::string task = fixture("tasks/sum-loop").string();
  struct Case { std::string args, says; };
  std::vector<Case> cases = {
      {"run " + task + " --proposer llm", "--llm-config"},
      {"run " + task + " --proposer gpt", "gpt"},
      {"run " + task + " --llm-config " + (dir / "missing.toml").string(), "missing.toml"},
      {"run " + task + " --llm-config " + (dir / "bad.toml").string(), "bad.toml:3: llm.api_key"},
      {"run " + task + " --llm-config " + (dir / "nomodel.toml").string(), "llm.model is required"},
      {"run " + task + " --llm-config " + (dir / "unknown.toml").string(), "agent.context: unknown key"},
      {"run " + task + " --llm-config " + (dir / "keyasname.toml").string(), "keyasname.toml:3: llm.api_key_env"},
      {"run " + task + " --llm-model m --llm-api-key-env sk-live-1234", "NAME of an environment variable"},
      {"run " + task + " --llm-config " + (dir / "nomodel.toml").string() + " --llm-model \"\"", "llm.model is required"},
      {"run " + task + " --proposer search --llm-model m", "are for --proposer llm"},
  };
  for (const auto& c : cases) {
    ProcessResult r = longhaul(c.args + " --out " + (dir / "run").string(), 60);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE((r.err + r.out).find(c.says), std::string::npos) << c.args << " said:\n" << r.err;
  }
}

// (d) and (e) through the real binary, with the key in the environment.
const char* kKey = "sk-test-SECRET-7f3a9c1e5b";

fs::path write_config(const fs::path& dir, const Server& server, const std::string& agent) {
  fs::create_directories(dir);
  fs::path p = dir / "llm.toml";
  std::ofstream(p) << "[llm]\nbase_url = \"" << server.base_url() << "\"\nmodel = \"scripted\"\n"
                   << "api_key_env = \"LONGHAUL_TEST_API_KEY\"\ntimeout = \"60s\"\nretry_base_delay = 0.05\n"
                   << "[agent]\n" << agent;
  return p;
}

bool file_contains(const fs::path& p, const std::string& needle) {
  auto content = read_file(p);
  return content && content->find(needle) != std::string::npos;
}

// The settings as options, with no file: the run uses them and keeps them (the key's name, not the key).
TEST(AgentCli, OptionsInsteadOfAConfigFile) {
  ::setenv("LONGHAUL_TEST_OPTION_KEY", "sk-option-key-2b7d", 1);
  Server server([](const json& req, size_t) { return worker(assistant_turns(req), int64_t(assistant_turns(req))); });
  fs::path run = fresh_dir("agent-cli-options");
  ProcessResult r = longhaul("run " + fixture("tasks/sum-loop").string() + " --out " + run.string() +
                             " --llm-base-url " + server.base_url() + " --llm-model scripted-by-option" +
                             " --llm-api-key-env LONGHAUL_TEST_OPTION_KEY --max-evals 3 -q", 120);
  ::unsetenv("LONGHAUL_TEST_OPTION_KEY");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunState s = fold(read_events(run));
  EXPECT_EQ(s.config.value("proposer", ""), "llm");
  const json llm = s.config["proposer_config"]["llm"];
  EXPECT_EQ(llm.value("model", ""), "scripted-by-option");
  EXPECT_EQ(llm.value("base_url", ""), server.base_url());
  EXPECT_EQ(llm.value("api_key_env", ""), "LONGHAUL_TEST_OPTION_KEY");
  EXPECT_EQ(s.stop_reason, "max_evals");
  EXPECT_EQ(s.evaluations, 3);
  auto reqs = server.requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].json.value("model", ""), "scripted-by-option");
  EXPECT_EQ(reqs[0].headers.find("Authorization")->second, "Bearer sk-option-key-2b7d");
  EXPECT_FALSE(file_contains(run / "run.db", "sk-option-key"));
}

std::optional<Event> open_tool_call(const std::vector<Event>& events, const std::string& name) {
  std::set<int64_t> answered;
  for (const auto& e : events)
    if (e.type == "tool_result") answered.insert(e.parent);
  for (const auto& e : events)
    if (e.type == "tool_call" && e.payload.value("name", "") == name && !answered.count(e.seq)) return e;
  return std::nullopt;
}

TEST(AgentCrash, KilledDuringARequestAndDuringAToolCallResumesWithoutAGap) {
  ::setenv("LONGHAUL_TEST_API_KEY", kKey, 1);
  fs::path task_dir = fresh_dir("agent-crash-task");
  fs::copy(fixture("tasks/sum-loop"), task_dir, fs::copy_options::recursive);
  {  // a slow bench, so that a kill can land inside an evaluation; and a harness that prints the key
     // variable as the steps see it, since their output is logged
    std::string h = *read_file(task_dir / "harness.sh");
    h.replace(h.find("    sum_to 200\n"), 15, "    sleep 1\n    sum_to 200\n");
    h = "echo \"the harness sees the key as '$LONGHAUL_TEST_API_KEY'\" >&2\n" + h;
    ASSERT_TRUE(write_file(task_dir / "harness.sh", h).ok());
  }
  std::atomic<bool> hang{true}, hanging{false};
  Server server([&](const json& req, size_t) -> ScriptedResponse {
    size_t turn = assistant_turns(req);
    ScriptedResponse r = worker(turn, int64_t(turn));
    if (turn == 2 && hang.exchange(false)) {
      r.delay_s = 60;
      hanging = true;
    }
    return r;
  });
  fs::path run = fresh_dir("agent-crash-run");
  fs::path config = write_config(fresh_dir("agent-crash-config"), server, "max_turns = 7\n");
  pid_t pid = spawn_longhaul({"run", task_dir.string(), "--out", run.string(), "--proposer", "llm",
                              "--llm-config", config.string(), "-q"});
  for (int i = 0; i < 600 && !hanging; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(hanging.load()) << "the third request never came";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  size_t before = server.request_count();
  std::string hung_body = server.requests().back().body;

  // Resume; kill it again inside the next evaluate.
  pid = spawn_longhaul({"resume", run.string(), "-q"});
  bool killed_in_tool = false;
  for (int i = 0; i < 600 && !killed_in_tool; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    auto events = read_events(run);
    auto open = open_tool_call(events, "evaluate");
    if (!open) continue;
    bool started = false;
    for (const auto& e : events) started |= e.type == "eval_started" && e.seq > open->seq;
    if (!started) continue;
    kill(pid, SIGKILL);
    killed_in_tool = true;
  }
  waitpid(pid, nullptr, 0);
  ASSERT_TRUE(killed_in_tool);
  ASSERT_GT(server.request_count(), before);
  EXPECT_EQ(server.requests()[before].body, hung_body) << "the request in flight is re-issued as it was";

  ProcessResult r = longhaul("resume " + run.string() + " -q", 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto events = read_events(run);
  RunState s = fold(events);
  EXPECT_EQ(s.stop_reason, "max_turns");
  EXPECT_EQ(s.sessions, 3);

  // No gap: every reply's calls were each called and answered once; every request after the first
  // carries all the replies before it (nothing was compacted at this budget).
  std::map<int64_t, int> results_of_call;
  int calls_made = 0, replies = 0, interrupted = 0;
  for (const auto& e : events) {
    if (e.type == "tool_call") { ++calls_made; results_of_call[e.seq]; }
    if (e.type == "tool_result") ++results_of_call[e.parent];
    if (e.type == "eval_interrupted") ++interrupted;
    if (e.type == "llm_reply") {
      EXPECT_EQ(e.payload["tool_calls"].size(), 3u);
      ++replies;
    }
  }
  EXPECT_EQ(replies, 7);
  EXPECT_EQ(calls_made, 3 * replies);
  for (const auto& [seq, n] : results_of_call) EXPECT_EQ(n, 1) << "tool_call " << seq;
  EXPECT_EQ(interrupted, 1);
  // The server saw each turn's request once, in order, but for the one in flight at the first kill,
  // sent again: no request whose reply was logged went out twice.
  auto reqs = server.requests();
  std::vector<size_t> turns_sent;
  for (const auto& q : reqs) turns_sent.push_back(assistant_turns(q.json));
  EXPECT_EQ(turns_sent, (std::vector<size_t>{0, 1, 2, 2, 3, 4, 5, 6}));
  // The resumed sessions saw exactly the context the log rebuilds, like an uninterrupted run.
  expect_contexts_rebuild(run, load(task_dir), &reqs);
  std::map<std::string, int> finished;
  for (const auto& e : events)
    if (e.type == "eval_finished" && !e.payload.contains("duplicate_of")) ++finished[e.payload.value("candidate", "")];
  for (const auto& [cand, n] : finished) EXPECT_EQ(n, 1) << cand << " evaluated " << n << " times";
  EXPECT_EQ(s.ledger.size(), 1u + 7u);

  // (e) The key went out in the header and into no file of the run.
  EXPECT_NE(reqs.front().headers.find("Authorization"), reqs.front().headers.end());
  EXPECT_EQ(reqs.front().headers.find("Authorization")->second, std::string("Bearer ") + kKey);
  int files = 0;
  for (const auto& f : fs::recursive_directory_iterator(run)) {
    if (!f.is_regular_file()) continue;
    ++files;
    EXPECT_FALSE(file_contains(f.path(), kKey)) << f.path();
  }
  EXPECT_GE(files, 1);
  EXPECT_FALSE(file_contains(run / "run.db", "sk-test")) << "run.db bytes";
  EXPECT_TRUE(file_contains(run / "run.db", "LONGHAUL_TEST_API_KEY")) << "the variable's name is recorded";
  EXPECT_TRUE(file_contains(run / "run.db", "the harness sees the key as ''")) << "the steps ran without the key";
  ::unsetenv("LONGHAUL_TEST_API_KEY");
}

TEST(AgentMarathon, ThousandToolCallsThroughASimulatedDay) {
  std::atomic<double> now{1.7e9};
  std::atomic<int64_t> k{0};
  Server server([&](const json& req, size_t) {
    now = now + 230.0;  // each turn takes a simulated ~4 minutes
    // Every turn writes a distinct candidate, so every evaluate is measured and has its own attempt.
    return worker(0, k++);
  });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server, 6000);
  c.stale_after = 5;
  RunOptions o = llm_options(c);
  o.clock = [&] { return now.load(); };
  o.budget.wall_time_s = 24 * 3600;
  o.budget.max_evals = 100000;
  fs::path run = fresh_dir("agent-marathon");
  auto t0 = std::chrono::steady_clock::now();
  RunEnd end = start_run(task, run, o);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "wall_time");
  RecordProperty("seconds", std::to_string(secs));

  auto events = events_of(run);
  int tool_calls = 0, evaluates = 0, compactions = 0;
  for (const auto& e : events) {
    if (e.type == "tool_call") {
      ++tool_calls;
      evaluates += e.payload.value("name", "") == "evaluate";
    }
    compactions += e.type == "compaction";
  }
  EXPECT_GE(tool_calls, 1000);
  EXPECT_GT(compactions, 0);

  // The ledger holds every attempt: the baseline, then exactly one attempt per evaluate call (its
  // proposal names the call) with the hypothesis the model gave, each a distinct candidate that was
  // measured (no duplicate answered from an earlier one).
  const std::vector<Attempt>& ledger = end.state.ledger;
  std::map<int64_t, std::string> hypothesis_of_call;
  std::map<int64_t, int> attempts_of_call;
  std::vector<size_t> ledger_size_at_request;  // attempts logged before each llm_request
  size_t proposals = 0;
  for (const auto& e : events) {
    if (e.type == "tool_call" && e.payload.value("name", "") == "evaluate")
      hypothesis_of_call[e.seq] = json::parse(e.payload.value("arguments", "{}")).value("hypothesis", "");
    if (e.type == "proposal" && e.payload.contains("tool_call")) {
      int64_t call = e.payload["tool_call"].get<int64_t>();
      int index = e.payload.value("attempt", -1);
      ++attempts_of_call[call];
      ASSERT_TRUE(index > 0 && index < int(ledger.size())) << index;
      EXPECT_EQ(ledger[size_t(index)].hypothesis, hypothesis_of_call[call]) << "attempt " << index;
    }
    if (e.type == "proposal") ++proposals;
    if (e.type == "llm_request") ledger_size_at_request.push_back(proposals);
  }
  EXPECT_EQ(ledger.size(), size_t(evaluates) + 1);
  EXPECT_EQ(attempts_of_call.size(), hypothesis_of_call.size());
  for (const auto& [call, n] : attempts_of_call) EXPECT_EQ(n, 1) << "tool_call " << call;
  std::set<std::string> candidates;
  for (const auto& a : ledger) {
    EXPECT_TRUE(a.evaluated()) << a.index;
    EXPECT_EQ(a.outcome, "ok") << a.index << ": " << a.detail;
    EXPECT_LT(a.duplicate_of, 0) << a.index;
    candidates.insert(a.candidate);
  }
  EXPECT_EQ(candidates.size(), ledger.size());

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), ledger_size_at_request.size()) << "no retries here: one logged request per HTTP request";
  bool stalled = false, masked = false;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const ReceivedRequest& r = reqs[i];
    ASSERT_GE(r.json["messages"].size(), 2u);
    const std::string card = r.json["messages"][1]["content"].get<std::string>();
    ASSERT_EQ(card.rfind("# Goal card", 0), 0u);
    ASSERT_LE(llm::estimate_tokens(r.body.size()), c.context_tokens) << "a request over the token budget";
    // The memory counts every attempt made so far, however many turns have left the window.
    ASSERT_NE(card.find("## Attempt ledger: " + std::to_string(ledger_size_at_request[i]) + " attempts"),
              std::string::npos) << "request " << i;
    if (size_t at = card.find("## Stalled"); at != std::string::npos) {
      stalled = true;
      EXPECT_NE(card.find(": start STEPS at ", at), std::string::npos) << "the directions tried are listed";
    }
    masked |= r.body.find("output masked by the runtime") != std::string::npos;
  }
  EXPECT_TRUE(stalled) << "no gain for many evaluations: the card should say so";
  // Tool outputs leave the window first, then old turns: no compaction drops a turn whose outputs it
  // has not masked, and by the end the oldest turns are gone (the ledger keeps their attempts).
  int dropped = 0;
  for (const auto& e : events)
    if (e.type == "compaction") {
      EXPECT_GE(e.payload.value("mask_before", 0), e.payload.value("drop_before", 0));
      dropped = std::max(dropped, e.payload.value("drop_before", 0));
    }
  EXPECT_TRUE(masked) << "some request carries a masked tool output";
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(reqs.back().body.find("\"w0r\""), std::string::npos) << "the first turn left the window";
  // The card at the end still names the goal and the budget, like the one at the start.
  std::string last = reqs.back().json["messages"][1]["content"];
  EXPECT_NE(last.find("Metric: steps, minimize"), std::string::npos);
  EXPECT_NE(last.find("wall time"), std::string::npos);

  // How long the context takes to build at the end of the day (for BENCHMARKS.md).
  auto store = EventStore::open(run / "run.db", true);
  ASSERT_TRUE(store.ok());
  RunState s = fold(events);
  llm::Transcript t = llm::fold_transcript(events);
  auto config = llm::agent_config_from_json(s.config["proposer_config"]);
  config->client.tools = llm::tool_defs();
  llm::ChatClient client(config->client);
  llm::Blobs blobs([&](const std::string& h) { return *(*store)->get_blob(h); });
  llm::ContextInputs in{s, task, *config, t, client, blobs};
  (void)llm::render(in);  // warm the blob cache, as the live agent's is
  auto r0 = std::chrono::steady_clock::now();
  const int reps = 20;
  for (int i = 0; i < reps; ++i) (void)llm::render(in);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - r0).count() / reps;
  RecordProperty("context_build_ms", std::to_string(ms));
  RecordProperty("attempts", std::to_string(s.ledger.size()));
  std::printf("context build at %zu attempts, %d turns: %.3f ms\n", s.ledger.size(), int(t.turns.size()), ms);
}

}  // namespace
}  // namespace longhaul::testing
