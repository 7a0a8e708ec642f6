// What the LLM proposer's memory costs at the end of a long run: the time to build the context of the
// next request at attempt 1,000, and how fast run.db grows per 1,000 turns.
//
// The run is real: the LLM agent, through the real HTTP client, against the scripted OpenAI-compatible
// server (tests/fixtures/scripted_server.h), on a task whose steps cost almost nothing but whose
// editable file is the size of gemm-cpu's gemm.cc (a copy of it). Each turn the scripted model writes
// a sentence, reads the file every fourth turn (an 8 KB tool output, clipped as configured), edits one
// line, and evaluates: TURNS turns make TURNS evaluated attempts after the baseline. Every request
// body, reply body and tool output is logged as a blob, as in any run.
//
// Then, on the finished log, it times what the agent does before each request (render: goal card,
// memory with the ledger, the window of recent turns, the request body; then plan_compaction on that
// render) with the blob cache warm, as the live agent's is: the median of REPS repetitions. It also
// prints what run.db holds: its size per 1,000 turns, the blobs by what they hold.
// Usage: context_bench [TURNS] [CONTEXT_TOKENS] [REPS]   (defaults: 1000 32000 1000; target < 5 ms)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <sqlite3.h>

#include "fixtures/scripted_server.h"
#include "llm/agent_config.h"
#include "llm/context.h"
#include "llm/tools.h"
#include "llm/transcript.h"
#include "run/run.h"
#include "store/event_store.h"
#include "task/task.h"
#include "util/fs.h"

using namespace longhaul;
using longhaul::testing::ScriptedResponse;
using longhaul::testing::ScriptedServer;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

void die(const std::string& what) {
  std::fprintf(stderr, "context_bench: %s\n", what.c_str());
  std::exit(1);
}

// A task with gemm-cpu's kernel as its editable file and steps that are a few shell built-ins: the
// metric is a function of the file (its size mod 97), so edits move it and the ledger varies.
fs::path make_task(const fs::path& dir) {
  fs::create_directories(dir);
  auto gemm = read_file(fs::path(LONGHAUL_SOURCE_DIR) / "tasks/gemm-cpu/gemm.cc");
  if (!gemm) die(gemm.error());
  auto w = [&](const char* name, const std::string& text) {
    if (!write_file(dir / name, text)) die(std::string("cannot write ") + name);
  };
  w("gemm.cc", "// variant 0\n" + *gemm);
  w("harness.sh",
    "case \"$1\" in\n"
    "  build) test -s gemm.cc ;;\n"
    "  check) grep -q 'void gemm' gemm.cc ;;\n"
    "  bench) echo \"{\\\"metric\\\": \\\"time_ms\\\", \\\"value\\\": $(( $(wc -c < gemm.cc) % 97 + 10 ))}\" ;;\n"
    "esac\n");
  w("task.toml",
    "name = \"context-bench\"\n"
    "description = \"Single-precision matrix multiply (a stand-in: the steps cost nothing, the files are real-sized).\"\n"
    "[goal]\nmetric = \"time_ms\"\ndirection = \"minimize\"\nunit = \"ms\"\n"
    "[files]\neditable = [\"gemm.cc\"]\nharness = [\"harness.sh\"]\n"
    "[[rules.forbidden]]\npattern = \"\\\\b(asm|__asm__)\\\\b\"\nreason = \"no inline assembly\"\n"
    "[steps.build]\ncommand = \"sh harness.sh build\"\ntimeout = \"10s\"\n"
    "[steps.check]\ncommand = \"sh harness.sh check\"\ntimeout = \"10s\"\n"
    "[steps.bench]\ncommand = \"sh harness.sh bench\"\ntimeout = \"10s\"\n"
    "[budget]\nmax_evals = 1000000\n");
  return dir;
}

json call(const std::string& id, const std::string& name, const json& args) {
  return {{"id", id}, {"name", name}, {"arguments", args.dump()}};
}

const char* kIdeas[] = {
    "a wider register tile so each broadcast of A is reused across more columns of B",
    "a deeper KC so each tile accumulates longer in registers before C is touched again",
    "packing A as well, so edge tiles take the fast kernel instead of the scalar path",
    "swap the tile loops so the packed B micro-panel stays in L1 across the row tiles",
    "unroll the k loop by four to hide the FMA latency",
    "a smaller MC so the A block fits in L2 with room for the B panel",
};

// Turn k of the scripted model (requests come one at a time and none fails, so k is the turn).
ScriptedResponse policy(const json& req, size_t k) {
  std::string id = "t" + std::to_string(k);
  std::string idea = kIdeas[k % 6];
  json calls = json::array();
  if (k % 4 == 0) calls.push_back(call(id + "r", "read_file", {{"path", "gemm.cc"}}));
  calls.push_back(call(id + "e", "edit_file", {{"path", "gemm.cc"},
                                               {"search", "// variant " + std::to_string(k) + "\n"},
                                               {"replace", "// variant " + std::to_string(k + 1) + "\n"}}));
  calls.push_back(call(id + "v", "evaluate", {{"hypothesis", "variant " + std::to_string(k + 1) + ": " + idea}}));
  if (k % 50 == 49)
    calls.push_back(call(id + "l", "record_lesson", {{"text", "after " + std::to_string(k + 1) +
                                                              " turns: " + idea + " did not pay off alone"}}));
  std::string text = "The ledger shows the last attempt against the best; next I try " + idea +
                     ", one focused change, then measure it.";
  size_t body = req.dump().size();
  return ScriptedServer::ok(ScriptedServer::completion(text, calls, int(body / 4), 180));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const int turns = argc > 1 ? std::atoi(argv[1]) : 1000;
  const int64_t context_tokens = argc > 2 ? std::atoll(argv[2]) : 32000;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 1000;
  fs::path tmp = fs::temp_directory_path() / ("longhaul-context-bench-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::path task_dir = make_task(tmp / "task");
  auto loaded = load_task(task_dir);
  if (!std::holds_alternative<Task>(loaded)) die("the bench task does not load");
  const Task task = std::get<Task>(loaded);

  ScriptedServer server(policy);
  llm::AgentConfig config;
  config.client.base_url = server.base_url();
  config.client.model = "scripted";
  config.client.timeout_s = 30;
  config.context_tokens = context_tokens;
  config.max_turns = turns;
  RunOptions options;
  options.proposer = "llm";
  options.proposer_config = llm::to_json(config);
  options.seed = 1;
  fs::path run = tmp / "run";
  auto t0 = std::chrono::steady_clock::now();
  RunEnd end = start_run(task, run, options);
  double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (end.exit_code != 0) die("the run failed: " + end.message);
  if (end.state.stop_reason != "max_turns") die("the run stopped early: " + end.state.stop_reason);

  auto store = EventStore::open(run / "run.db", /*read_only=*/true);
  if (!store) die(store.error());
  auto events = (*store)->read();
  if (!events) die(events.error());

  // The state the agent holds before its next request, folded from the whole log.
  RunState s = fold(*events);
  llm::Transcript t = llm::fold_transcript(*events);
  auto agent_config = llm::agent_config_from_json(s.config["proposer_config"]);
  if (!agent_config) die(agent_config.error());
  agent_config->client.tools = llm::tool_defs();
  llm::ChatClient client(agent_config->client);
  llm::Blobs blobs([&](const std::string& h) { return *(*store)->get_blob(h); });
  llm::ContextInputs in{s, task, *agent_config, t, client, blobs};

  // What the agent does before each request (Agent::request): render, then ask whether a compaction
  // is due (none is, most turns; plan_compaction returns at once then).
  llm::Rendered warm = llm::render(in);  // the live agent's blob cache is warm too
  bool compaction_due = llm::plan_compaction(in, false, warm).has_value();
  std::vector<double> build_ms;
  for (int i = 0; i < reps; ++i) {
    auto a = std::chrono::steady_clock::now();
    llm::Rendered r = llm::render(in);
    auto plan = llm::plan_compaction(in, false, r);
    auto b = std::chrono::steady_clock::now();
    if (r.body != warm.body || plan.has_value() != compaction_due) die("rendering is not deterministic");
    build_ms.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  // A forced plan (what a context_length error asks for): the per-turn arithmetic on top of a render.
  std::vector<double> forced_ms;
  for (int i = 0; i < std::max(1, reps / 10); ++i) {
    auto a = std::chrono::steady_clock::now();
    auto plan = llm::plan_compaction(in, true);
    auto b = std::chrono::steady_clock::now();
    (void)plan;
    forced_ms.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  auto loadavg = read_file("/proc/loadavg");
  std::string load = loadavg ? *loadavg : "?";
  if (!load.empty() && load.back() == '\n') load.pop_back();

  // What the log holds: events by type (payload bytes) and blobs by what they are.
  std::map<std::string, std::pair<int, size_t>> by_type;
  std::map<std::string, std::set<std::string>> blob_kind;
  int tool_calls = 0, compactions = 0, attempts_llm = 0;
  for (const auto& e : *events) {
    auto& [n, bytes] = by_type[e.type];
    ++n;
    bytes += e.payload.dump().size();
    if (e.type == "llm_request") blob_kind["request bodies"].insert(e.payload.value("context", ""));
    if (e.type == "llm_reply") blob_kind["reply bodies"].insert(e.payload.value("body", ""));
    if (e.type == "tool_result") blob_kind["tool outputs"].insert(e.payload.value("result", ""));
    if (e.type == "tool_call") ++tool_calls;
    if (e.type == "compaction") ++compactions;
  }
  for (const auto& a : s.ledger) {
    attempts_llm += a.strategy == "llm";
    for (const auto& [path, hash] : a.files) blob_kind["candidate files"].insert(hash);
  }
  std::set<std::string> counted;
  std::map<std::string, std::pair<size_t, size_t>> blob_bytes;  // kind -> (count, bytes)
  for (const auto& [kind, hashes] : blob_kind)
    for (const auto& h : hashes) {
      if (h.empty() || !counted.insert(h).second) continue;
      blob_bytes[kind].first++;
      blob_bytes[kind].second += blobs.get(h).size();
    }
  // The tables' totals as SQLite holds them (blobs of every kind, step outputs included).
  int64_t db_blobs = 0, db_blob_bytes = 0, db_payload_bytes = 0;
  {
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2((run / "run.db").c_str(), &raw, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
      sqlite3_stmt* q = nullptr;
      if (sqlite3_prepare_v2(raw, "select count(*), total(length(data)), (select total(length(payload)) from events) from blobs",
                             -1, &q, nullptr) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) {
        db_blobs = sqlite3_column_int64(q, 0);
        db_blob_bytes = int64_t(sqlite3_column_double(q, 1));
        db_payload_bytes = int64_t(sqlite3_column_double(q, 2));
      }
      sqlite3_finalize(q);
    }
    sqlite3_close(raw);
  }
  std::error_code ec;
  uintmax_t db = fs::file_size(run / "run.db", ec);
  uintmax_t wal = fs::exists(run / "run.db-wal") ? fs::file_size(run / "run.db-wal", ec) : 0;
  double per_1000 = double(db + wal) / double(t.replies) * 1000.0;

  std::printf("conditions: %lld turns (replies), %d tool calls, %zu attempts in the ledger (%d by the agent, "
              "%d evaluated), context budget %lld tokens, %d compactions\n",
              (long long)t.replies, tool_calls, s.ledger.size(), attempts_llm, s.evaluations,
              (long long)context_tokens, compactions);
  std::printf("the run took %.1f s (%.1f ms a turn, steps included)\n", run_s, 1e3 * run_s / double(t.replies));
  std::printf("next request at attempt %zu: %zu bytes, ~%lld tokens, %zu messages (window: turns %d..%zu, "
              "tool outputs masked before %d); compaction due: %s\n",
              s.ledger.size() - 1, warm.body.size(), (long long)warm.tokens, warm.messages.size(),
              t.drop_before, t.turns.size() - 1, t.mask_before, compaction_due ? "yes" : "no");
  std::printf("context build (render + plan_compaction)  median %.3f ms  min %.3f  p10 %.3f  p90 %.3f  "
              "(target < 5 ms; %d repetitions, load average %s, %u cores)\n",
              median(build_ms), quantile(build_ms, 0), quantile(build_ms, 0.1), quantile(build_ms, 0.9), reps,
              load.c_str(), std::thread::hardware_concurrency());
  std::printf("a forced compaction plan                  median %.3f ms  min %.3f\n", median(forced_ms),
              quantile(forced_ms, 0));
  std::printf("run.db: %ju bytes (+ %ju WAL) after %lld turns = %.2f MB per 1,000 turns\n", db, wal,
              (long long)t.replies, per_1000 / 1e6);
  std::printf("  event payloads %.2f MB in %zu events; blobs %.2f MB in %lld (of which, by what they hold):\n",
              double(db_payload_bytes) / 1e6, events->size(), double(db_blob_bytes) / 1e6, (long long)db_blobs);
  for (const auto& [kind, cb] : blob_bytes)
    std::printf("    %-16s %6zu blobs  %8.2f MB  (%.1f KB each)\n", kind.c_str(), cb.first,
                double(cb.second) / 1e6, double(cb.second) / 1e3 / double(std::max<size_t>(1, cb.first)));
  std::printf("  largest event types by payload:");
  std::vector<std::pair<size_t, std::string>> types;
  for (const auto& [type, nb] : by_type) types.push_back({nb.second, type});
  std::sort(types.rbegin(), types.rend());
  for (size_t i = 0; i < std::min<size_t>(5, types.size()); ++i)
    std::printf(" %s %.2f MB (%d)", types[i].second.c_str(), double(types[i].first) / 1e6, by_type[types[i].second].first);
  std::printf("\n");
  store->reset();
  fs::remove_all(tmp);
  return 0;
}
