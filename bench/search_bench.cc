// The search proposer against plain random search on a real task, at equal evaluation counts.
// Each point of the space is built and checked once and benched REPEATS times; its figure is the
// least of the bench medians (interference from the rest of a shared machine only adds time, so the
// least is the steadiest estimate) and is cached, so every strategy and seed sees the same value for
// the same point and the comparison is not noise.
// The reference best is the best of everything measured (every run of every strategy and seed, and
// the cache's earlier points), then polished: a coordinate descent from it that measures every other
// value of each parameter in turn and moves to the fastest, until a whole pass finds nothing faster.
// So the reference is at least a local optimum of the space in every single parameter, whoever found
// it. (Measuring every valid point would be the cleaner reference, but gemm-cpu has 96,696 of them at
// seconds each.) The table is printed against the unpolished reference first, then the polished one.
// JOBS measurements run at once, each pinned to its own hardware_concurrency()/JOBS cores when
// JOBS > 1 (a machine with cores to spare; the default 1 is for a small shared one). The runs
// advance independently: a run waits only for its own point. A run's proposals depend only on the
// cached values, never on the order in which points were measured, so JOBS changes the time taken,
// not the result.
// Usage: search_bench [TASK] [SEEDS] [EVALS] [CACHE] [REPEATS] [STRATEGIES] [JOBS]
//        (defaults: tasks/gemm-cpu 5 40 /tmp/longhaul-search-bench-<task>-<content hash>.json 3 bandit,random 1)
// STRATEGIES: comma-separated proposer strategies, each run SEEDS times (seed s + 100 * its position).
// Prints, per strategy, the median over seeds of the evaluations needed to reach 80, 90 and 95% of the
// reference best (a time within best/0.95 for 95%), per seed in brackets, and the median best at the end.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "eval/cascade.h"
#include "eval/workspace.h"
#include "search/proposer.h"
#include "task/task.h"
#include "util/fs.h"

using namespace longhaul;
namespace fs = std::filesystem;

namespace {

// Builds, checks and benches one point in a workspace of its own: the least of `repeats` bench
// medians, or nullopt when any step fails.
struct Measurer {
  const Task& task;
  Candidate base;
  int repeats = 3;

  std::optional<double> operator()(const nlohmann::json& params, const fs::path& ws) const {
    Candidate c = base;
    c.params = params;
    fs::remove_all(ws);
    std::optional<double> value;
    if (make_workspace(task, c, ws)) {
      CascadeContext ctx{ws, uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()), nullptr, {}, {}};
      EvalResult r = run_cascade(task, c, ctx);
      if (r.outcome == outcome::ok) value = r.goal->value;
      for (int i = 1; value && i < repeats; ++i) {
        EvalResult again = bench_result(task, run_step(task, *task.step("bench"), params, ctx));
        if (again.outcome == outcome::ok) value = std::min(*value, again.goal->value);
      }
    }
    fs::remove_all(ws);
    return value;
  }
};

// The cache of measured points ({"params JSON": ms or null}) and the workers that fill it. Only the
// main thread reads the cache; workers hand their results over through done_.
class Oracle {
 public:
  Oracle(Measurer measurer, fs::path cache_path, int jobs) : measurer_(std::move(measurer)), path_(std::move(cache_path)) {
    if (auto text = read_file(path_)) cache_ = nlohmann::json::parse(*text, nullptr, false);
    if (!cache_.is_object()) cache_ = nlohmann::json::object();
    unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    unsigned per_job = std::max(1u, cpus / unsigned(jobs));
    for (int k = 0; k < jobs; ++k) {
      std::vector<int> pin;
      for (unsigned c = 0; jobs > 1 && c < per_job && k * per_job + c < cpus; ++c) pin.push_back(int(k * per_job + c));
      workers_.emplace_back([this, k, pin] { work(k, pin); });
    }
  }
  ~Oracle() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
    save();
  }

  const nlohmann::json& cache() const { return cache_; }
  std::optional<std::optional<double>> cached(const std::string& key) const {
    auto it = cache_.find(key);
    if (it == cache_.end()) return std::nullopt;
    return it->is_null() ? std::optional<double>() : std::optional<double>(it->get<double>());
  }
  int measured() const { return measured_; }
  size_t in_flight() const { return in_flight_.size(); }

  // Queues `key` for measurement unless it is cached or queued already.
  void request(const std::string& key) {
    if (cache_.contains(key) || !in_flight_.insert(key).second) return;
    {
      std::lock_guard lock(mu_);
      todo_.push_back(key);
    }
    wake_.notify_one();
  }

  // Waits for at least one queued measurement to finish and caches all that have; returns their keys.
  std::vector<std::string> collect() {
    std::unique_lock lock(mu_);
    got_.wait(lock, [&] { return !done_.empty(); });
    std::vector<std::string> keys;
    for (auto& [key, value] : done_) {
      cache_[key] = value ? nlohmann::json(*value) : nlohmann::json();
      in_flight_.erase(key);
      keys.push_back(key);
      if (++measured_ % 10 == 0) save();
    }
    done_.clear();
    return keys;
  }

  void save() const { (void)write_file(path_, cache_.dump()); }

 private:
  void work(int k, const std::vector<int>& pin) {
    if (!pin.empty()) {  // inherited by the build, check and bench processes the cascade starts
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : pin) CPU_SET(c, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    fs::path ws = fs::temp_directory_path() / ("longhaul-search-bench-ws-" + std::to_string(k));
    for (;;) {
      std::string key;
      {
        std::unique_lock lock(mu_);
        wake_.wait(lock, [&] { return stop_ || !todo_.empty(); });
        if (stop_) return;
        key = todo_.front();
        todo_.pop_front();
      }
      auto value = measurer_(nlohmann::json::parse(key), ws);
      {
        std::lock_guard lock(mu_);
        done_.emplace_back(key, value);
      }
      got_.notify_one();
    }
  }

  Measurer measurer_;
  fs::path path_;
  nlohmann::json cache_;
  std::set<std::string> in_flight_;  // main thread only
  int measured_ = 0;
  std::mutex mu_;  // guards todo_, done_, stop_
  std::condition_variable wake_, got_;
  std::deque<std::string> todo_;
  std::vector<std::pair<std::string, std::optional<double>>> done_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::optional<double> as_score(std::optional<double> ms) {
  return ms ? std::optional<double>(-*ms) : std::nullopt;  // the proposer maximizes
}

// One search run of `length` evaluations after the baseline, keeping its best-so-far after each
// (index 0 is the baseline). Advanced by the main loop: propose a point, wait for its value, observe.
struct Trajectory {
  std::string strategy;
  int length;
  std::unique_ptr<SearchProposer> proposer;
  std::vector<double> best;
  std::optional<Point> waiting;  // proposed, not observed yet
  bool done = false;

  Trajectory(const Space& space, std::string name, uint64_t seed, int evals)
      : strategy(std::move(name)), length(evals), proposer(SearchProposer::create(space, seed, strategy).value()) {
    waiting = space.default_point();  // the baseline, observed like any other point
  }

  // Proposes when nothing is waiting; observes the waiting point if its value is cached, else queues
  // it. Returns true when it observed.
  bool advance(const Space& space, Oracle& oracle) {
    if (done) return false;
    if (!waiting) {
      auto p = proposer->next();
      if (!p) {
        done = true;
        return false;
      }
      waiting = p->point;
    }
    std::string key = space.to_json(*waiting).dump();
    auto value = oracle.cached(key);
    if (!value) {
      oracle.request(key);
      return false;
    }
    proposer->observe(*waiting, as_score(*value));
    waiting.reset();
    best.push_back(std::min(best.empty() ? 1e300 : best.back(), value->value_or(1e300)));
    done = int(best.size()) > length;
    return true;
  }
};

// Runs every trajectory to its end, measuring what they propose JOBS points at a time.
void run_all(const Space& space, Oracle& oracle, std::vector<Trajectory>& all) {
  int reported = 0;
  for (;;) {
    for (auto& t : all)
      while (t.advance(space, oracle)) {}  // as far as the cache allows
    if (oracle.in_flight() == 0) return;  // nobody waits
    oracle.collect();
    if (oracle.measured() / 50 > reported) {
      reported = oracle.measured() / 50;
      size_t shortest = SIZE_MAX;
      for (const auto& t : all) shortest = std::min(shortest, t.done ? SIZE_MAX : t.best.size());
      std::fprintf(stderr, "%d points measured; the least advanced run is at evaluation %zu\n", oracle.measured(),
                   shortest == SIZE_MAX ? 0 : shortest - 1);
    }
  }
}

// Measures `points` (those not cached), JOBS at a time.
void measure_all(const Space& space, Oracle& oracle, const std::vector<Point>& points) {
  for (const auto& p : points) oracle.request(space.to_json(p).dump());
  while (oracle.in_flight() > 0) oracle.collect();
}

// The cached figures of the points valid in this space, in cache order (a cache file passed by hand
// may hold others).
std::vector<std::pair<Point, double>> valid_figures(const Space& space, const Oracle& oracle) {
  std::vector<std::pair<Point, double>> out;
  for (const auto& [key, v] : oracle.cache().items())
    if (auto p = space.from_json(nlohmann::json::parse(key, nullptr, false)); v.is_number() && p && space.valid(*p))
      out.emplace_back(std::move(*p), v.get<double>());
  return out;
}

// The best measured point, improved by coordinate descent: for each parameter in turn every other
// value (valid points only) is measured and the fastest taken if it is faster, until a full pass over
// the parameters moves nothing. Returns its time and how many points it measured.
std::pair<double, int> polish(const Space& space, Oracle& oracle) {
  std::optional<Point> best;
  double best_value = 1e300;
  for (auto& [p, v] : valid_figures(space, oracle)) {
    if (v < best_value) best = std::move(p), best_value = v;
  }
  int before = oracle.measured();
  for (bool moved = best.has_value(); moved;) {
    moved = false;
    for (size_t d = 0; d < space.dims(); ++d) {
      std::vector<Point> line;
      for (int i = 0; i < space.size(d); ++i) {
        Point q = *best;
        q[d] = i;
        if (i != (*best)[d] && space.valid(q)) line.push_back(q);
      }
      measure_all(space, oracle, line);
      for (const auto& q : line) {
        auto v = *oracle.cached(space.to_json(q).dump());
        if (v && *v < best_value) {
          best_value = *v;
          best = q;
          moved = true;
        }
      }
    }
    std::fprintf(stderr, "polish: %.4g after %d points\n", best_value, oracle.measured() - before);
  }
  return {best_value, oracle.measured() - before};
}

// Per strategy: the median over seeds (and each seed) of the evaluations to come within 80, 90 and
// 95% of `reference`, and the median best at the end.
void print_table(const std::vector<std::string>& strategies,
                 const std::map<std::string, std::vector<std::vector<double>>>& runs, double reference, int seeds,
                 int evals) {
  std::printf("evaluations to come within a fraction of the reference best (median over %d seeds; per seed in brackets, - = not reached)\n",
              seeds);
  std::printf("%-9s %22s %22s %22s %12s\n", "strategy", "80%", "90%", "95%", "best at end");
  for (const auto& strategy : strategies) {
    const auto& trajs = runs.at(strategy);
    std::printf("%-9s", strategy.c_str());
    for (double fraction : {0.80, 0.90, 0.95}) {
      std::vector<double> reach;
      std::string per_seed;
      for (const auto& t : trajs) {
        int hit = evals + 1;
        for (size_t i = 0; i < t.size(); ++i)
          if (t[i] <= reference / fraction) { hit = int(i); break; }
        reach.push_back(hit);
        per_seed += (per_seed.empty() ? "" : " ") + (hit > evals ? std::string("-") : std::to_string(hit));
      }
      double m = median(reach);
      std::string cell = (m > evals ? ">" + std::to_string(evals) : std::to_string(int(m))) + " [" + per_seed + "]";
      std::printf(" %22s", cell.c_str());
    }
    std::vector<double> last;
    for (const auto& t : trajs) last.push_back(t.back());
    std::printf(" %12.4g\n", median(last));
  }
}

}  // namespace

int main(int argc, char** argv) {
  fs::path task_dir = argc > 1 ? argv[1] : fs::path(LONGHAUL_SOURCE_DIR) / "tasks/gemm-cpu";
  int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  int evals = argc > 3 ? std::atoi(argv[3]) : 40;
  fs::path cache_path = argc > 4 ? argv[4] : "";
  int repeats = argc > 5 ? std::atoi(argv[5]) : 3;
  std::vector<std::string> strategies;
  for (std::string list = argc > 6 ? argv[6] : "bandit,random", item; !list.empty();) {
    size_t comma = list.find(',');
    item = list.substr(0, comma);
    list = comma == std::string::npos ? "" : list.substr(comma + 1);
    if (!item.empty()) strategies.push_back(item);
  }
  int jobs = argc > 7 ? std::atoi(argv[7]) : 1;
  auto known = [](const std::string& name) {
    const auto& all = search_strategies();
    return std::find(all.begin(), all.end(), name) != all.end();
  };
  if (seeds < 1 || evals < 1 || repeats < 1 || jobs < 1 || strategies.empty() ||
      !std::all_of(strategies.begin(), strategies.end(), known))
    return std::fprintf(stderr, "usage: search_bench [TASK] [SEEDS>=1] [EVALS>=1] [CACHE] [REPEATS>=1] [STRATEGIES] [JOBS>=1]\n"), 2;
  auto loaded = load_task(task_dir);
  if (auto* e = std::get_if<TaskError>(&loaded)) return std::fprintf(stderr, "%s\n", e->str().c_str()), 2;
  const Task& task = std::get<Task>(loaded);
  auto space = Space::compile(task.space);
  if (!space) return std::fprintf(stderr, "%s\n", space.error().c_str()), 2;

  // The cache holds one task's figures: by default its file is named after the task's content hash,
  // so a changed kernel or harness starts a fresh one.
  if (cache_path.empty())
    cache_path = fs::temp_directory_path() / ("longhaul-search-bench-" + task.name + "-" + task_hash(task).substr(0, 12) + ".json");

  Measurer measurer{task, {}, repeats};
  auto files = list_files(task.dir);
  if (!files) return std::fprintf(stderr, "%s\n", files.error().c_str()), 1;
  for (const auto& rel : *files)
    if (glob_match_any(task.editable, rel)) measurer.base.files[rel] = *read_file(task.dir / rel);
  Oracle oracle(std::move(measurer), cache_path, jobs);

  std::vector<Trajectory> all;
  for (int s = 1; s <= seeds; ++s) {
    // Distinct seeds per strategy, so that no two runs share a random stream.
    for (size_t k = 0; k < strategies.size(); ++k) all.emplace_back(*space, strategies[k], uint64_t(s) + 100 * k, evals);
  }
  run_all(*space, oracle, all);
  oracle.save();
  std::map<std::string, std::vector<std::vector<double>>> runs;
  for (const auto& t : all) runs[t.strategy].push_back(t.best);
  double baseline = all.front().best.front();
  auto report = [&](double reference, const std::string& how) {
    int near = 0;
    for (const auto& [p, v] : valid_figures(*space, oracle)) near += v <= reference / 0.95;
    std::printf("task %s: baseline %.4g, reference best %.4g (%.2fx; %s), %zu points measured in all (%d within 95%% of "
                "the best), %d evaluations a run, each point the least of %d bench medians, %d at once\n",
                task.name.c_str(), baseline, reference, baseline / reference, how.c_str(), oracle.cache().size(), near,
                evals, repeats, jobs);
    print_table(strategies, runs, reference, seeds, evals);
    std::fflush(stdout);
  };
  double measured_best = 1e300;
  for (const auto& [p, v] : valid_figures(*space, oracle)) measured_best = std::min(measured_best, v);
  report(measured_best, "the best measured, not polished yet");
  auto [reference, polished] = polish(*space, oracle);
  oracle.save();
  report(reference, "polished: " + std::to_string(polished) + " points measured for it");
  return 0;
}
