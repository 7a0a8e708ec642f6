// How long resuming a long run takes: a log of 100,000 events shaped like a real run's (proposals,
// intents, step results, verdicts) is written, then reopened, read and folded as `resume` does.
// Usage: fold_bench [EVENTS]   (target: fold/resume of 100,000 events under one second)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "run/state.h"
#include "store/event_store.h"

using namespace longhaul;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
  long target = argc > 1 ? std::atol(argv[1]) : 100000;
  auto path = std::filesystem::temp_directory_path() / "longhaul-fold-bench.db";
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
  auto store = EventStore::create(path);
  if (!store) return std::fprintf(stderr, "%s\n", store.error().c_str()), 1;
  auto& db = **store;
  std::string blob = db.put_blob("int main() { return 0; }\n").value();

  auto t0 = Clock::now();
  (void)db.begin_batch();
  long n = 0;
  (void)db.append("run_created", {{"task", {{"name", "bench"}, {"hash", "h"}}},
                                  {"goal", {{"metric", "time_ms"}, {"direction", "minimize"}}},
                                  {"seed", "1"}, {"budget", nlohmann::json::object()}});
  (void)db.append("session_started", {{"task_hash", "h"}});
  n += 2;
  for (int a = 0; n < target; ++a) {
    std::string cand = std::to_string(a);
    int64_t p = *db.append("proposal", {{"attempt", a}, {"candidate", cand}, {"strategy", a ? "hill" : "baseline"},
                                        {"params", {{"MC", a % 7}, {"KC", a % 11}}}, {"files", {{"gemm.cc", blob}}}});
    int64_t s = *db.append("eval_started", {{"attempt", a}, {"candidate", cand}, {"seed", "42"}}, p);
    for (const char* step : {"build", "check", "bench"})
      (void)db.append("step_finished", {{"attempt", a}, {"step", step}, {"end", "exited"}, {"exit_code", 0},
                                        {"wall_s", 0.5}, {"stdout", blob}, {"stderr", blob}}, s);
    (void)db.append("eval_finished", {{"attempt", a}, {"candidate", cand}, {"outcome", "ok"},
                                      {"metric", 100.0 - a * 1e-3}, {"spread", 0.01},
                                      {"metrics", {{"time_ms", 100.0 - a * 1e-3}}}}, s);
    (void)db.append("verdict", {{"attempt", a}, {"crowned", a % 3 == 0}, {"metric", 100.0 - a * 1e-3}});
    n += 7;
    if (n % 7000 == 0) { (void)db.commit_batch(); (void)db.begin_batch(); }
  }
  (void)db.commit_batch();
  double write_s = since(t0);
  store->reset();

  auto t1 = Clock::now();
  auto reopened = EventStore::open(path);
  auto events = (*reopened)->read();
  double read_s = since(t1);
  auto t2 = Clock::now();
  RunState state = fold(*events);
  double fold_s = since(t2);
  std::printf("events %zu  attempts %zu  file %.1f MB\n", events->size(), state.ledger.size(),
              std::filesystem::file_size(path) / 1e6);
  std::printf("write (batched)    %.3f s\n", write_s);
  std::printf("open + read        %.3f s\n", read_s);
  std::printf("fold               %.3f s\n", fold_s);
  std::printf("resume total       %.3f s  (target < 1 s)\n", read_s + fold_s);
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + s);
  return 0;
}
