// Crash safety: a run killed with SIGKILL at random moments and resumed each time must end with the
// same ledger as an uninterrupted run with the same seed, with no candidate evaluated twice and an
// intact database. LONGHAUL_CRASH_KILLS sets the number of kills (default 20; the long mode uses more).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "cli_testing.h"

namespace longhaul::testing {
namespace {

struct LedgerRow {
  std::string candidate, outcome;
  std::optional<double> metric;
  bool operator==(const LedgerRow&) const = default;
};

std::vector<LedgerRow> ledger_of(const RunState& s) {
  std::vector<LedgerRow> rows;
  for (const auto& a : s.ledger) rows.push_back({a.candidate, a.outcome, a.metric});
  return rows;
}

int kills_wanted() {
  const char* env = std::getenv("LONGHAUL_CRASH_KILLS");
  return env ? std::max(1, std::atoi(env)) : 20;
}

TEST(CrashSafety, KilledAndResumedRunMatchesUninterruptedRun) {
  const std::string task = fixture("tasks/slow-quadratic").string();
  const std::string seed = "12345";
  // Long enough that every wanted kill lands before the run is done (about 2-3 evaluations a session).
  const std::string evals = std::to_string(std::min(4 * kills_wanted(), 350));
  auto reference_dir = fresh_dir("crash-reference");
  auto r = longhaul("run " + task + " --out " + reference_dir.string() + " --seed " + seed +
                    " --max-evals " + evals + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  RunState reference = read_state(reference_dir);
  ASSERT_EQ(reference.stop_reason, "max_evals");

  auto dir = fresh_dir("crash-killed");
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> delay_ms(5, 250);
  int kills = 0, attempts = 0;
  bool first = true;
  while (kills < kills_wanted() && attempts < 10 * kills_wanted()) {
    ++attempts;
    std::vector<std::string> args =
        first ? std::vector<std::string>{"run", task, "--out", dir.string(), "--seed", seed,
                                         "--max-evals", evals, "-q"}
              : std::vector<std::string>{"resume", dir.string(), "-q"};
    pid_t pid = spawn_longhaul(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ++kills;
    }
    // A kill before run.db exists leaves nothing to resume: start again.
    first = !std::filesystem::exists(dir / "run.db");
    if (!first && read_state(dir).stop_reason == "max_evals") break;
  }
  EXPECT_GE(kills, kills_wanted()) << "the run ended before every wanted kill landed";
  r = longhaul("resume " + dir.string() + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto events = read_events(dir);
  RunState killed = fold(events);
  EXPECT_EQ(killed.stop_reason, "max_evals");
  EXPECT_EQ(ledger_of(killed), ledger_of(reference)) << "after " << kills << " kills";

  std::map<std::string, int> finished;
  int interrupted = 0;
  for (const auto& e : events) {
    if (e.type == "eval_finished") ++finished[e.payload.value("candidate", "")];
    if (e.type == "eval_interrupted") ++interrupted;
  }
  for (const auto& [candidate, n] : finished) EXPECT_EQ(n, 1) << candidate << " evaluated " << n << " times";
  EXPECT_GT(killed.sessions, 1);
  EXPECT_GE(interrupted, 1) << "no kill landed inside an evaluation";
  std::printf("kills %d, sessions %d, interrupted evaluations %d, attempts %zu\n", kills,
              killed.sessions, interrupted, killed.ledger.size());
  RecordProperty("kills", kills);
  RecordProperty("interrupted_evaluations", interrupted);

  auto store = EventStore::open(dir / "run.db", true);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(*(*store)->integrity_check(), "ok");
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(reference_dir);
}

}  // namespace
}  // namespace longhaul::testing
