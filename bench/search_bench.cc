// The search proposer against plain random search on a real task, at equal evaluation counts.
// Each point of the space is built and checked once and benched REPEATS times; its figure is the
// least of the bench medians (interference from the rest of a shared machine only adds time, so the
// least is the steadiest estimate) and is cached, so every strategy and seed sees the same value for
// the same point and the comparison is not noise. The reference best is the best of everything
// measured, a bandit run three times as long included.
// Usage: search_bench [TASK] [SEEDS] [EVALS] [CACHE] [REPEATS]
//        (defaults: tasks/gemm-cpu 5 40 /tmp/longhaul-search-bench-cache.json 3)
// Prints, per strategy, the median over seeds of the evaluations needed to reach 95% of the reference
// best (a time within best/0.95), and the median best after a quarter, half and all of the budget.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "eval/cascade.h"
#include "eval/workspace.h"
#include "search/proposer.h"
#include "util/fs.h"

using namespace longhaul;
namespace fs = std::filesystem;

namespace {

struct Oracle {
  const Task& task;
  fs::path cache_path;
  nlohmann::json cache = nlohmann::json::object();
  Candidate base;
  int repeats = 3;
  int measured = 0;

  std::optional<double> operator()(const nlohmann::json& params) {
    std::string key = params.dump();
    if (cache.contains(key)) return cache[key].is_null() ? std::nullopt : std::optional<double>(cache[key]);
    Candidate c = base;
    c.params = params;
    fs::path ws = fs::temp_directory_path() / "longhaul-search-bench-ws";
    fs::remove_all(ws);
    std::optional<double> value;
    if (make_workspace(task, c, ws)) {
      CascadeContext ctx{ws, uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()), nullptr, {}};
      EvalResult r = run_cascade(task, c, ctx);
      if (r.outcome == outcome::ok) value = r.goal->value;
      for (int i = 1; value && i < repeats; ++i) {
        EvalResult again = bench_result(task, run_step(task, *task.step("bench"), params, ctx));
        if (again.outcome == outcome::ok) value = std::min(*value, again.goal->value);
      }
    }
    fs::remove_all(ws);
    cache[key] = value ? nlohmann::json(*value) : nlohmann::json();
    if (++measured % 10 == 0) (void)write_file(cache_path, cache.dump());
    return value;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One search run, advanced one evaluation at a time, keeping its best-so-far after each (index 0 is
// the baseline).
struct Trajectory {
  std::string strategy;  // "bandit" or "random", or "long" for the reference run (a bandit)
  std::unique_ptr<SearchProposer> proposer;
  std::vector<double> best;
  bool done = false;

  Trajectory(const Space& space, Oracle& oracle, std::string name, uint64_t seed)
      : strategy(std::move(name)),
        proposer(SearchProposer::create(space, seed, strategy == "long" ? "bandit" : strategy).value()) {
    Point base = space.default_point();
    auto v0 = oracle(space.to_json(base));
    proposer->observe(base, v0 ? std::optional<double>(-*v0) : std::nullopt);
    best.push_back(v0.value_or(1e300));
  }

  void advance(const Space& space, Oracle& oracle) {
    auto p = done ? std::nullopt : proposer->next();
    if (!p) {
      done = true;
      return;
    }
    auto v = oracle(space.to_json(p->point));
    proposer->observe(p->point, v ? std::optional<double>(-*v) : std::nullopt);
    best.push_back(v ? std::min(best.back(), *v) : best.back());
  }
};

}  // namespace

int main(int argc, char** argv) {
  fs::path task_dir = argc > 1 ? argv[1] : fs::path(LONGHAUL_SOURCE_DIR) / "tasks/gemm-cpu";
  int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  int evals = argc > 3 ? std::atoi(argv[3]) : 40;
  fs::path cache_path = argc > 4 ? argv[4] : fs::temp_directory_path() / "longhaul-search-bench-cache.json";
  int repeats = argc > 5 ? std::atoi(argv[5]) : 3;
  if (seeds < 1 || evals < 1 || repeats < 1)
    return std::fprintf(stderr, "usage: search_bench [TASK] [SEEDS>=1] [EVALS>=1] [CACHE] [REPEATS>=1]\n"), 2;
  auto loaded = load_task(task_dir);
  if (auto* e = std::get_if<TaskError>(&loaded)) return std::fprintf(stderr, "%s\n", e->str().c_str()), 2;
  const Task& task = std::get<Task>(loaded);
  auto space = Space::compile(task.space);
  if (!space) return std::fprintf(stderr, "%s\n", space.error().c_str()), 2;

  Oracle oracle{task, cache_path};
  oracle.repeats = repeats;
  if (auto text = read_file(cache_path)) oracle.cache = nlohmann::json::parse(*text, nullptr, false);
  if (!oracle.cache.is_object()) oracle.cache = nlohmann::json::object();
  auto files = list_files(task.dir);
  if (!files) return std::fprintf(stderr, "%s\n", files.error().c_str()), 1;
  for (const auto& rel : *files)
    if (glob_match_any(task.editable, rel)) oracle.base.files[rel] = *read_file(task.dir / rel);

  // All runs advance in lockstep, one evaluation each in turn, so that a busy spell of the machine
  // falls on every strategy alike rather than on whichever ran at the time.
  std::vector<Trajectory> all;
  for (int s = 1; s <= seeds; ++s) {
    // Distinct seeds per strategy, so that no two runs share a random stream.
    all.emplace_back(*space, oracle, "bandit", uint64_t(s));
    all.emplace_back(*space, oracle, "random", uint64_t(s) + 100);
  }
  all.emplace_back(*space, oracle, "long", 1000);  // the bandit, run three times as long, for the reference
  for (int i = 0; i < 3 * evals; ++i) {
    for (auto& t : all)
      if (i < evals || t.strategy == "long") t.advance(*space, oracle);
    if (i % 10 == 9)
      std::fprintf(stderr, "evaluation %d of each run: %d points measured so far\n", i + 1, oracle.measured);
  }
  (void)write_file(cache_path, oracle.cache.dump());
  std::map<std::string, std::vector<std::vector<double>>> runs;
  for (const auto& t : all)
    if (t.strategy != "long") runs[t.strategy].push_back(t.best);
  const auto& long_run = all.back().best;

  double reference = long_run.back();
  for (const auto& [key, v] : oracle.cache.items())
    if (v.is_number()) reference = std::min(reference, v.get<double>());
  double baseline = runs["bandit"][0][0];
  int near = 0;
  for (const auto& [key, v] : oracle.cache.items()) near += v.is_number() && v.get<double>() <= reference / 0.95;
  std::printf("task %s: baseline %.4g, reference best %.4g (%.2fx), %zu points measured in all (%d within 95%% of the best), "
              "%d evaluations a run, each point the least of %d bench medians\n",
              task.name.c_str(), baseline, reference, baseline / reference, oracle.cache.size(), near, evals, repeats);
  std::printf("evaluations to come within a fraction of the reference best (median over %d seeds; per seed in brackets, - = not reached)\n",
              seeds);
  std::printf("%-8s %22s %22s %22s %12s\n", "strategy", "80%", "90%", "95%", "best at end");
  for (const auto& [strategy, trajs] : runs) {
    std::printf("%-8s", strategy.c_str());
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
  return 0;
}
