#include "run/run.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <random>

#include "eval/cascade.h"
#include "eval/workspace.h"
#include "llm/agent_config.h"
#include "run/lab.h"
#include "search/space.h"
#include "store/event_store.h"
#include "util/fs.h"

namespace longhaul {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path run_db_path(const fs::path& run_dir) { return run_dir / "run.db"; }

namespace {

constexpr int kRemeasureRounds = 3;

struct Interrupted {};           // thrown through the loop when the user stops the run
struct Failed { std::string message; };

json budget_json(const Budget& b) {
  json j = json::object();
  if (b.max_evals) j["max_evals"] = *b.max_evals;
  if (b.wall_time_s) j["wall_time_s"] = *b.wall_time_s;
  if (b.patience) j["patience"] = *b.patience;
  return j;
}

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

const char* direction_name(Direction d) { return d == Direction::minimize ? "minimize" : "maximize"; }

// Holds an exclusive lock on the run folder for as long as it lives; the kernel drops it if the
// process dies, so a SIGKILLed run never leaves a stale lock.
class RunLock {
 public:
  explicit RunLock(const fs::path& dir) {
    fd_ = ::open((dir / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    locked_ = fd_ >= 0 && ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }
  ~RunLock() { if (fd_ >= 0) ::close(fd_); }
  bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

// One transaction, so the blobs of an event and the event itself cost one fsync together. Nothing is
// lost by grouping: the group is committed before the runner moves on to the next side effect.
class Batch {
 public:
  explicit Batch(EventStore& store) : store_(store) {
    if (!store_.begin_batch()) throw Failed{"cannot begin a transaction on the event log"};
  }
  ~Batch() noexcept(false) {
    if (!store_.commit_batch() && !std::uncaught_exceptions())
      throw Failed{"cannot commit to the event log"};
  }

 private:
  EventStore& store_;
};

class Runner : public Lab {
 public:
  Runner(std::unique_ptr<EventStore> store, Task task, fs::path dir, RunOptions options)
      : store_(std::move(store)), task_(std::move(task)), dir_(std::move(dir)),
        options_(std::move(options)) {
    if (options_.clock) store_->set_clock(options_.clock);
  }

  Status load() {
    auto events = store_->read();
    if (!events) return Error{events.error()};
    state_ = fold(*events);
    hidden_env_ = llm::secret_env(state_.config.value("proposer_config", json::object()));
    return ok_status();
  }

  const Task& task() const override { return task_; }
  const RunState& state() const override { return state_; }
  double now() const override { return options_.clock ? options_.clock() : wall_clock_seconds(); }

  std::vector<Event> read_events(int64_t after_seq) override {
    auto events = store_->read(after_seq);
    if (!events) throw Failed{"cannot read the event log: " + events.error()};
    return std::move(*events);
  }

  const std::atomic<bool>* cancel_flag() const override { return options_.cancel; }

  int64_t log(const std::string& type, const json& payload, int64_t parent = 0) override {
    auto seq = store_->append(type, payload, parent);
    if (!seq) throw Failed{"cannot write the event log: " + seq.error()};
    state_.apply(Event{*seq, store_->last_append_time(), type, parent, payload});
    return *seq;
  }

  std::string put_blob(std::string_view data) override {
    auto h = store_->put_blob(data);
    if (!h) throw Failed{"cannot write a blob: " + h.error()};
    return *h;
  }

  std::string get_blob(const std::string& hash) override {
    auto content = store_->get_blob(hash);
    if (!content) throw Failed{"the log refers to a missing blob: " + content.error()};
    return *content;
  }

  Candidate candidate_of(const Attempt& a) override {
    Candidate c;
    c.params = a.params;
    for (const auto& [path, hash] : a.files) c.files[path] = get_blob(hash);
    return c;
  }

  Candidate base_candidate(const json& params) override {
    Candidate c;
    c.params = params;
    for (const auto& [path, hash] : state_.config["base_files"].items())
      c.files[path] = get_blob(hash.get<std::string>());
    return c;
  }

  // The proposal and the intent to evaluate it are one transaction: one fsync, not two.
  int evaluate(const Candidate& c, const std::string& strategy, const json& extra) override {
    int index;
    std::optional<Opened> opened;
    {
      Batch batch(*store_);
      index = propose(c, strategy, extra);
      opened = open_attempt(index);
    }
    if (opened) run_attempt(index, *opened);
    finish(index);
    return index;
  }

  RunEnd execute() {
    try {
      loop();
      return {0, "", state_};
    } catch (const Interrupted&) {
      log("stopped", {{"reason", "interrupted"}});
      return {130, "interrupted; resume with: longhaul resume " + dir_.string(), state_};
    } catch (const Failed& f) {
      // The failure may be the log itself; try to record it, but report it either way.
      try { log("stopped", {{"reason", "error"}, {"message", f.message}}); } catch (const Failed&) {}
      return {1, f.message, state_};
    }
  }

 private:
  void check_cancel() const {
    if (options_.cancel && options_.cancel->load()) throw Interrupted{};
  }

  int propose(const Candidate& c, const std::string& strategy, const json& extra = json::object()) {
    json files = json::object();
    for (const auto& [path, content] : c.files) files[path] = put_blob(content);
    json payload = extra.is_object() ? extra : json::object();
    payload.update({{"attempt", state_.ledger.size()},
                    {"candidate", c.hash()},
                    {"params", c.params},
                    {"files", files},
                    {"strategy", strategy}});
    log("proposal", payload);
    return int(state_.ledger.size()) - 1;
  }

  fs::path workspace_for(int attempt, const std::string& suffix = "") {
    fs::path p = dir_ / "work" / ("a" + std::to_string(attempt) + suffix);
    std::error_code ec;
    fs::remove_all(p, ec);
    return p;
  }

  json step_payload(int attempt, const Step& step, const ProcessResult& r) {
    return {{"attempt", attempt},           {"step", step.name},
            {"end", to_string(r.end)},      {"exit_code", r.exit_code},
            {"signal", r.signal},           {"wall_s", r.wall_s},
            {"stdout", put_blob(r.out)},        {"stderr", put_blob(r.err)},
            {"stdout_truncated", r.out_truncated}, {"stderr_truncated", r.err_truncated}};
  }

  struct Opened {
    int64_t intent;
    uint64_t seed;
  };

  // Logs the intent to evaluate an attempt, or, for a candidate evaluated before, its earlier result.
  std::optional<Opened> open_attempt(int index) {
    check_cancel();
    const Attempt& a = state_.ledger[size_t(index)];
    if (auto it = state_.by_candidate.find(a.candidate); it != state_.by_candidate.end()) {
      const Attempt& first = state_.ledger[size_t(it->second)];
      json result = {{"attempt", index}, {"outcome", first.outcome}, {"duplicate_of", first.index},
                     {"detail", "the same candidate as attempt " + std::to_string(first.index)}};
      if (first.metric) result["metric"] = *first.metric;
      log("eval_finished", result, a.proposal_seq);
      return std::nullopt;
    }
    uint64_t seed = fresh_seed();
    int64_t intent = log("eval_started", {{"attempt", index}, {"candidate", a.candidate},
                                          {"seed", std::to_string(seed)}}, a.proposal_seq);
    return Opened{intent, seed};
  }

  // The whole cascade for one opened attempt. Its steps and its result are logged together at the
  // end: if the process dies before, the intent alone is on disk and the attempt is run again.
  void run_attempt(int index, Opened opened) {
    Attempt a = state_.ledger[size_t(index)];
    Candidate c = candidate_of(a);
    fs::path ws = workspace_for(index);
    std::vector<std::pair<Step, ProcessResult>> steps;
    EvalResult r;
    if (auto s = make_workspace(task_, c, ws, dir_); !s) {
      r.outcome = outcome::crashed;
      r.failed_step = "workspace";
      r.detail = s.error();
    } else {
      CascadeContext ctx{ws, opened.seed, options_.cancel,
                         [&](const Step& step, const ProcessResult& pr) {
                           steps.emplace_back(step, pr);
                         },
                         hidden_env_};
      r = run_cascade(task_, c, ctx);
    }
    std::error_code ec;
    fs::remove_all(ws, ec);
    if (r.cancelled()) throw Interrupted{};
    json metrics = json::object();
    for (const auto& [name, m] : r.metrics) metrics[name] = m.value;
    json result = {{"attempt", index}, {"candidate", a.candidate}, {"outcome", r.outcome},
                   {"failed_step", r.failed_step}, {"detail", r.detail}, {"metrics", metrics}};
    if (r.goal) {
      result["metric"] = r.goal->value;
      result["spread"] = r.goal->spread;
    }
    Batch batch(*store_);
    for (const auto& [step, pr] : steps) log("step_finished", step_payload(index, step, pr), opened.intent);
    if (!r.profile.empty()) result["profile"] = put_blob(r.profile);
    log("eval_finished", result, opened.intent);
  }

  void evaluate_attempt(int index) {
    std::optional<Opened> opened;
    {
      Batch batch(*store_);
      opened = open_attempt(index);
    }
    if (opened) run_attempt(index, *opened);
  }

  // Builds a candidate in a workspace for re-measurement; nullopt if it no longer builds.
  std::optional<fs::path> build_for_remeasure(int index, const std::string& suffix, uint64_t seed,
                                              int64_t intent) {
    const Attempt& a = state_.ledger[size_t(index)];
    fs::path ws = workspace_for(index, suffix);
    if (!make_workspace(task_, candidate_of(a), ws, dir_)) return std::nullopt;
    const Step* build = task_.step("build");
    if (!build) return ws;
    CascadeContext ctx{ws, seed, options_.cancel, {}, hidden_env_};
    ProcessResult r = run_step(task_, *build, a.params, ctx);
    if (r.end == ProcessResult::End::cancelled) throw Interrupted{};
    {
      Batch batch(*store_);
      log("step_finished", step_payload(index, *build, r), intent);
    }
    if (r.end != ProcessResult::End::exited || r.exit_code != 0) return std::nullopt;
    return ws;
  }

  std::optional<double> bench_once(int index, const fs::path& ws, uint64_t seed, int64_t intent) {
    const Attempt& a = state_.ledger[size_t(index)];
    CascadeContext ctx{ws, seed, options_.cancel, {}, hidden_env_};
    ProcessResult r = run_step(task_, *task_.step("bench"), a.params, ctx);
    if (r.end == ProcessResult::End::cancelled) throw Interrupted{};
    {
      Batch batch(*store_);
      log("step_finished", step_payload(index, *task_.step("bench"), r), intent);
    }
    EvalResult b = bench_result(task_, r);
    if (b.outcome != outcome::ok) return std::nullopt;
    return b.goal->value;
  }

  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  // Two candidates rebuilt and benched in turn, so drift in the machine hits both alike. Logged as
  // KIND_started / KIND_finished; returns the values, or nullopt if either failed to measure.
  std::optional<std::pair<std::vector<double>, std::vector<double>>> interleaved(
      const std::string& kind, int index, int other) {
    uint64_t seed = fresh_seed();
    int64_t intent = log(kind + "_started", {{"attempt", index}, {"incumbent", other},
                                             {"rounds", kRemeasureRounds}});
    auto ws_c = build_for_remeasure(index, "-c", seed, intent);
    auto ws_i = build_for_remeasure(other, "-i", seed, intent);
    std::vector<double> vc, vi;
    for (int round = 0; ws_c && ws_i && round < kRemeasureRounds; ++round) {
      auto c = bench_once(index, *ws_c, seed, intent);
      auto i = bench_once(other, *ws_i, seed, intent);
      if (!c || !i) break;
      vc.push_back(*c);
      vi.push_back(*i);
    }
    std::error_code ec;
    fs::remove_all(dir_ / "work", ec);
    log(kind + "_finished", {{"attempt", index}, {"incumbent", other},
                             {"candidate_values", vc}, {"incumbent_values", vi}}, intent);
    if (vc.size() < size_t(kRemeasureRounds)) return std::nullopt;
    return std::make_pair(vc, vi);
  }

  // A close call is settled by medians measured side by side with the incumbent.
  void remeasure(int index, int incumbent) {
    auto values = interleaved("remeasure", index, incumbent);
    if (!values) {
      log("verdict", {{"attempt", index}, {"crowned", false},
                      {"reason", "re-measurement failed to complete"}});
      return;
    }
    double mc = median(values->first), mi = median(values->second);
    bool crowned = state_.better(mc, mi);
    log("verdict", {{"attempt", index}, {"crowned", crowned}, {"metric", mc},
                    {"reason", "re-measured " + std::to_string(kRemeasureRounds) +
                                   " rounds interleaved: median " + std::to_string(mc) + " vs " +
                                   std::to_string(mi) + " for the incumbent"}});
  }

  // Before a run ends, its best and its baseline are measured again side by side: the baseline was
  // measured once, perhaps hours ago on a busier machine, and the ratio reported should not hang on it.
  void confirm_best() {
    if (!state_.best || *state_.best == 0 || state_.confirmed_attempt == *state_.best) return;
    (void)interleaved("confirm", *state_.best, 0);
  }

  void judge(int index) {
    const Attempt& a = state_.ledger[size_t(index)];
    double m = *a.metric;
    if (!state_.best) {
      log("verdict", {{"attempt", index}, {"crowned", true}, {"metric", m},
                      {"reason", a.baseline() ? "baseline" : "first correct candidate"}});
      return;
    }
    const Attempt& best = state_.ledger[size_t(*state_.best)];
    if (!state_.better(m, state_.best_metric)) {
      log("verdict", {{"attempt", index}, {"crowned", false}, {"reason", "not better than the best"}});
      return;
    }
    double noise = std::max(a.spread, best.spread);
    if (std::abs(m - state_.best_metric) > noise) {
      log("verdict", {{"attempt", index}, {"crowned", true}, {"metric", m},
                      {"reason", "better than the best by more than the spread"}});
      return;
    }
    remeasure(index, best.index);
  }

  void finish(int index) {
    if (state_.ledger[size_t(index)].verdict_pending) judge(index);
    if (options_.on_attempt) options_.on_attempt(state_, state_.ledger[size_t(index)]);
  }

  std::optional<std::string> stop_reason() const {
    const Budget& b = state_.budget;
    if (state_.target_reached()) return "target";
    if (b.max_evals && state_.evaluations >= *b.max_evals) return "max_evals";
    if (b.patience && state_.since_gain >= *b.patience) return "patience";
    if (b.wall_time_s && state_.elapsed_s + (now() - state_.last_time) >= *b.wall_time_s)
      return "wall_time";
    return std::nullopt;
  }

  void loop() {
    std::error_code ec;
    fs::remove_all(dir_ / "work", ec);  // workspaces a killed process left behind

    // Finish what was in flight when the last session ended, so the proposer resumes from a ledger
    // in which every attempt is evaluated and judged.
    if (state_.open_remeasure)
      log(state_.open_remeasure_kind + "_interrupted", json::object(), state_.open_remeasure);
    for (size_t i = 0; i < state_.ledger.size(); ++i) {
      if (int64_t intent = state_.ledger[i].open_intent)
        log("eval_interrupted", {{"attempt", int(i)}}, intent);
      if (!state_.ledger[i].evaluated()) evaluate_attempt(int(i));
      if (state_.ledger[i].verdict_pending) finish(int(i));
    }

    if (state_.ledger.empty()) {
      auto space = Space::compile(task_.space);
      if (!space) throw Failed{"parameter space: " + space.error()};
      evaluate(base_candidate(space->to_json(space->default_point())), "baseline", json::object());
    }
    if (!state_.baseline_metric) {
      const Attempt& b = state_.ledger[0];
      throw Failed{"the baseline (the task's own files) did not evaluate: " + b.outcome +
                   (b.detail.empty() ? "" : "\n" + b.detail)};
    }

    auto proposer = make_proposer(state_, task_);
    if (!proposer) throw Failed{proposer.error()};
    if (auto s = (*proposer)->resume(*this); !s) throw Failed{s.error()};
    while (true) {
      check_cancel();
      std::optional<std::string> reason = stop_reason();
      if (!reason) reason = (*proposer)->step(*this);
      if (reason) {
        confirm_best();
        log("stopped", {{"reason", *reason}});
        return;
      }
    }
  }

  std::unique_ptr<EventStore> store_;
  Task task_;
  fs::path dir_;
  RunOptions options_;
  RunState state_;
  std::vector<std::string> hidden_env_;  // kept from every step (the LLM's API key variable)
};

}  // namespace

RunEnd start_run(const Task& task, const fs::path& run_dir, const RunOptions& options) {
  std::error_code ec;
  if (fs::exists(run_db_path(run_dir)))
    return {2, run_dir.string() + " already holds a run; continue it with: longhaul resume " +
                   run_dir.string(), {}};
  fs::create_directories(run_dir, ec);
  if (ec) return {1, "cannot create " + run_dir.string() + ": " + ec.message(), {}};
  RunLock lock(run_dir);
  if (!lock.locked()) return {1, run_dir.string() + " is in use by another longhaul process", {}};
  // The store is made under a temporary name and renamed once it holds run_created, so a run.db
  // always describes a run: a kill during creation leaves only the temporary file.
  fs::path creating = run_dir / "run.db.creating";
  for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(creating.string() + suffix, ec);
  auto store = EventStore::create(creating);
  if (!store) return {1, store.error(), {}};

  json base_files = json::object();
  auto files = list_files(task.dir);
  if (!files) return {1, files.error(), {}};
  for (const auto& rel : *files) {
    if (!glob_match_any(task.editable, rel)) continue;
    auto content = read_file(task.dir / rel);
    if (!content) return {1, content.error(), {}};
    auto h = (*store)->put_blob(*content);
    if (!h) return {1, h.error(), {}};
    base_files[rel] = *h;
  }
  Budget budget = task.budget;
  if (options.budget.max_evals) budget.max_evals = options.budget.max_evals;
  if (options.budget.wall_time_s) budget.wall_time_s = options.budget.wall_time_s;
  if (options.budget.patience) budget.patience = options.budget.patience;
  json goal = {{"metric", task.goal.metric}, {"direction", direction_name(task.goal.direction)},
               {"unit", task.goal.unit}};
  if (task.goal.target_value) goal["target"] = *task.goal.target_value;
  if (task.goal.target_ratio) goal["target_ratio"] = *task.goal.target_ratio;
  uint64_t seed = options.seed.value_or(fresh_seed());
  std::string hash = task_hash(task);
  json created = {{"format", 1},
                  {"task", {{"name", task.name}, {"dir", fs::absolute(task.dir).string()},
                            {"file", task.file.string()}, {"hash", hash}}},
                  {"goal", goal},
                  {"proposer", options.proposer},
                  {"strategy", options.strategy},
                  {"seed", std::to_string(seed)},
                  {"budget", budget_json(budget)},
                  {"base_files", base_files}};
  if (options.proposer != "search") created["proposer_config"] = options.proposer_config;
  if (options.clock) (*store)->set_clock(options.clock);
  if (auto s = (*store)->append("run_created", created); !s) return {1, s.error(), {}};
  store.value().reset();  // closing checkpoints the WAL into the file itself
  fs::rename(creating, run_db_path(run_dir), ec);
  if (ec) return {1, "cannot create " + run_db_path(run_dir).string() + ": " + ec.message(), {}};
  store = EventStore::open(run_db_path(run_dir));
  if (!store) return {1, store.error(), {}};
  if (options.clock) (*store)->set_clock(options.clock);
  if (auto s = (*store)->append("session_started", {{"pid", ::getpid()}, {"task_hash", hash}}); !s)
    return {1, s.error(), {}};
  Runner runner(std::move(*store), task, run_dir, options);
  if (auto s = runner.load(); !s) return {1, s.error(), {}};
  return runner.execute();
}

RunEnd resume_run(const fs::path& run_dir, const RunOptions& options) {
  if (!fs::exists(run_db_path(run_dir))) return {2, run_dir.string() + " holds no run (no run.db)", {}};
  RunLock lock(run_dir);
  if (!lock.locked()) return {1, run_dir.string() + " is in use by another longhaul process", {}};
  auto store = EventStore::open(run_db_path(run_dir));
  if (!store) return {1, store.error(), {}};
  auto events = (*store)->read();
  if (!events) return {1, events.error(), {}};
  RunState state = fold(*events);
  if (state.config.is_null()) return {1, run_dir.string() + ": the log has no run_created event", {}};
  fs::path task_dir = state.config["task"].value("dir", "");
  auto loaded = load_task(state.config["task"].value("file", task_dir.string()));
  if (auto* err = std::get_if<TaskError>(&loaded)) return {2, err->str(), state};
  Task task = std::get<Task>(std::move(loaded));
  std::string hash = task_hash(task);
  if (hash != state.task_hash && !options.force)
    return {2, "the task in " + task_dir.string() + " changed since this run last ran; resume with " +
                   "--force to continue against the changed task", state};
  json session = {{"pid", ::getpid()}, {"task_hash", hash}, {"budget", budget_json(options.budget)}};
  if (hash != state.task_hash) session["forced"] = true;
  if (options.clock) (*store)->set_clock(options.clock);
  if (auto s = (*store)->append("session_started", session); !s) return {1, s.error(), state};
  Runner runner(std::move(*store), std::move(task), run_dir, options);
  if (auto s = runner.load(); !s) return {1, s.error(), state};
  return runner.execute();
}

}  // namespace longhaul
