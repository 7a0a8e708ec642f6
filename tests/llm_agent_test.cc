// The LLM proposer end to end, against the scripted OpenAI-compatible server through the real client:
// (a) the context of every logged request rebuilds byte for byte from the log; (b) a policy that edits
// the code ends with a better candidate than the baseline (sum-loop, and the default task gemm-cpu);
// (c) faults at 20% of calls do not stop the run; (d) SIGKILL during a request and during a tool call,
// then resume: no gap, nothing evaluated twice; (e) the API key is in no file the run wrote; (f) the
// marathon: 1,000+ tool calls through a simulated day within the token budget, the goal card at the
// head of every request.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
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
                            call(id + "e", "evaluate", {{"hypothesis", "start STEPS at " + std::to_string(2 + k % 5)}})});
  return reply(calls);
}

TEST(AgentFaults, TwentyPercentFaultyCallsAndTheRunCompletes) {
  std::mt19937 rng(7);
  std::atomic<int> k{0};
  std::map<std::string, int> injected;
  Server server([&](const json& req, size_t) -> ScriptedResponse {
    int i = k++;
    if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.2) {
      switch (i % 6) {
        case 0: ++injected["429"]; return Server::status(429, {{"error", {{"message", "slow down"}}}}, {{"Retry-After", "0"}});
        case 1: ++injected["500"]; return Server::status(500, {{"error", {{"message", "boom"}}}});
        case 2: { ++injected["hang"]; ScriptedResponse r = improver(0); r.delay_s = 3; return r; }
        case 3: { ++injected["truncated"]; ScriptedResponse r = worker(0, i); r.truncate_at = long(r.body.size() / 2); return r; }
        case 4: ++injected["unknown_tool"]; return reply(json::array({call("u" + std::to_string(i), "launch_rockets", json::object())}));
        default: ++injected["bad_args"];
          return reply(json::array({{{"id", "b" + std::to_string(i)}, {"name", "edit_file"}, {"arguments", "{\"path\": \"sum.sh\", "}},
                                    call("b2" + std::to_string(i), "read_file", {{"path", 42}})}));
      }
    }
    return worker(assistant_turns(req), i);
  });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server, 8000);
  c.client.timeout_s = 1;
  c.max_turns = 40;
  fs::path run = fresh_dir("agent-faults");
  RunEnd end = start_run(task, run, llm_options(c));
  ASSERT_EQ(end.exit_code, 0) << end.message;
  EXPECT_EQ(end.state.stop_reason, "max_turns");
  int total = 0;
  for (const auto& [kind, n] : injected) total += n;
  EXPECT_GE(total, 6) << "faults injected";
  EXPECT_GE(injected.size(), 4u);
  int malformed = 0, errors_told = 0;
  for (const auto& e : events_of(run)) {
    if (e.type == "llm_error") malformed += e.payload.value("kind", "") == "malformed";
    if (e.type == "tool_result" && !e.payload.value("ok", true)) ++errors_told;
  }
  EXPECT_EQ(malformed, injected["truncated"]);
  EXPECT_GE(errors_told, injected["unknown_tool"] + injected["bad_args"]);
  EXPECT_GT(end.state.evaluations, 5);
  expect_contexts_rebuild(run, task, nullptr);
}

TEST(AgentFaults, ContextLengthErrorCompactsAndAsksAgain) {
  Server server([](const json& req, size_t i) -> ScriptedResponse {
    if (i == 6)
      return Server::status(400, {{"error", {{"message", "This model's maximum context length is 4096 tokens"},
                                             {"code", "context_length_exceeded"}}}});
    return worker(assistant_turns(req), int64_t(i));
  });
  Task task = load(fixture("tasks/sum-loop"));
  auto c = config_for(server);
  c.max_turns = 8;
  fs::path run = fresh_dir("agent-context-length");
  RunEnd end = start_run(task, run, llm_options(c));
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

TEST(AgentCli, UsageErrorsNameTheProblem) {
  fs::path dir = fresh_dir("agent-cli");
  fs::create_directories(dir);
  std::ofstream(dir / "bad.toml") << "[llm]\nmodel = \"m\"\napi_key = \"sk-x\"\n";
  std::ofstream(dir / "nomodel.toml") << "[llm]\nbase_url = \"http://x/v1\"\n";
  std::ofstream(dir / "unknown.toml") << "[llm]\nmodel = \"m\"\n[agent]\ncontext = 5\n";
  std::string task = fixture("tasks/sum-loop").string();
  struct Case { std::string args, says; };
  std::vector<Case> cases = {
      {"run " + task + " --proposer llm", "--llm-config"},
      {"run " + task + " --proposer gpt", "gpt"},
      {"run " + task + " --llm-config " + (dir / "missing.toml").string(), "missing.toml"},
      {"run " + task + " --llm-config " + (dir / "bad.toml").string(), "bad.toml:3: llm.api_key"},
      {"run " + task + " --llm-config " + (dir / "nomodel.toml").string(), "llm.model is required"},
      {"run " + task + " --llm-config " + (dir / "unknown.toml").string(), "agent.context: unknown key"},
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
  {  // a slow bench, so that a kill can land inside an evaluation
    std::string h = *read_file(task_dir / "harness.sh");
    h.replace(h.find("    sum_to 200\n"), 15, "    sleep 1\n    sum_to 200\n");
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
  auto reqs = server.requests();
  EXPECT_EQ(assistant_turns(reqs.back().json), 6u);
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
  ::unsetenv("LONGHAUL_TEST_API_KEY");
}

TEST(AgentMarathon, ThousandToolCallsThroughASimulatedDay) {
  std::atomic<double> now{1.7e9};
  std::atomic<int64_t> k{0};
  Server server([&](const json& req, size_t) {
    now = now + 230.0;  // each turn takes a simulated ~4 minutes
    // 60 distinct candidates, then repeats: dedup answers those, which keeps the test fast.
    return worker(0, k++ % 60);
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
  // The ledger holds every attempt: the baseline and one per evaluate, each evaluated.
  EXPECT_EQ(end.state.ledger.size(), size_t(evaluates) + 1);
  for (const auto& a : end.state.ledger) EXPECT_TRUE(a.evaluated()) << a.index;
  auto reqs = server.requests();
  bool stalled = false;
  for (const auto& r : reqs) {
    ASSERT_GE(r.json["messages"].size(), 2u);
    const std::string card = r.json["messages"][1]["content"].get<std::string>();
    ASSERT_EQ(card.rfind("# Goal card", 0), 0u);
    ASSERT_LE(llm::estimate_tokens(r.body.size()), c.context_tokens) << "a request over the token budget";
    stalled |= card.find("## Stalled") != std::string::npos;
  }
  EXPECT_TRUE(stalled) << "no gain for many evaluations: the card should say so";
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
