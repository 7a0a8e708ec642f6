// The runtime's own cost per evaluation: `longhaul run` on a task whose steps do almost nothing,
// against a shell script that does the same work by hand (copy the task into a fresh workspace, run
// build, check and bench with the same environment). The difference over N evaluations is what the
// event log, the cascade and the proposer add. Usage: overhead_bench [N]  (target: under 30 ms)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "exec/process.h"

using namespace longhaul;
namespace fs = std::filesystem;

static double timed(const std::string& command) {
  ProcessSpec spec;
  spec.command = command;
  spec.cwd = fs::current_path();
  spec.timeout_s = 600;
  auto t = std::chrono::steady_clock::now();
  ProcessResult r = run_process(spec);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  if (r.end != ProcessResult::End::exited || r.exit_code != 0) {
    std::fprintf(stderr, "failed: %s\n%s\n", command.c_str(), r.err.c_str());
    std::exit(1);
  }
  return s;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 200;
  fs::path task = fs::path(LONGHAUL_SOURCE_DIR) / "tests/fixtures/tasks/quadratic";
  fs::path tmp = fs::temp_directory_path() / "longhaul-overhead-bench";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  std::string script = (tmp / "by_hand.sh").string();
  FILE* f = std::fopen(script.c_str(), "w");
  // The same steps the runtime runs, over the same 20x20 grid, with nothing recorded.
  std::fprintf(f,
               "set -e\ni=0\nwhile [ $i -lt %d ]; do\n"
               "  ws=%s/ws-$i; cp -r %s $ws; cd $ws\n"
               "  export LONGHAUL_SEED=$i LONGHAUL_PARAM_X=$((i %% 20)) LONGHAUL_PARAM_Y=$((i / 20 %% 10))\n"
               "  sh candidate.sh build; sh candidate.sh check; sh candidate.sh bench >/dev/null\n"
               "  cd /; rm -rf $ws; i=$((i+1))\ndone\n",
               n, tmp.c_str(), task.c_str());
  std::fclose(f);
  double by_hand = timed("sh " + script);
  double runtime = timed(std::string(LONGHAUL_BINARY) + " run " + task.string() + " --out " +
                         (tmp / "run").string() + " --max-evals " + std::to_string(n) + " -q");
  std::printf("evaluations          %d\n", n);
  std::printf("shell script         %.1f ms per evaluation\n", 1e3 * by_hand / n);
  std::printf("longhaul run         %.1f ms per evaluation\n", 1e3 * runtime / n);
  std::printf("runtime overhead     %.1f ms per evaluation  (target < 30 ms)\n", 1e3 * (runtime - by_hand) / n);
  fs::remove_all(tmp);
  return 0;
}
