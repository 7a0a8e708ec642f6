#include "exec/process.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace longhaul {
namespace {

using End = ProcessResult::End;

ProcessResult run(const std::string& command, double timeout_s = 10) {
  ProcessSpec spec;
  spec.command = command;
  spec.timeout_s = timeout_s;
  return run_process(spec);
}

// Dead, or a zombie waiting for a reaper that we don't control (PID 1 in a container may not reap).
bool gone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (::kill(pid, 0) == -1 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    auto paren = line.rfind(')');
    if (paren != std::string::npos && paren + 2 < line.size() &&
        (line[paren + 2] == 'Z' || line[paren + 2] == 'X'))
      return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

pid_t first_pid(const std::string& out) {
  std::istringstream in(out);
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

TEST(Process, ExitCodes) {
  auto ok = run("true");
  EXPECT_EQ(ok.end, End::exited);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_TRUE(ok.error.empty());
  auto three = run("exit 3");
  EXPECT_EQ(three.end, End::exited);
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_GE(three.wall_s, 0);
  EXPECT_LT(three.wall_s, 5);
}

TEST(Process, CapturesStdoutAndStderrSeparately) {
  auto r = run("echo to-out; echo to-err >&2; printf tail");
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.out, "to-out\ntail");
  EXPECT_EQ(r.err, "to-err\n");
  EXPECT_FALSE(r.out_truncated);
  EXPECT_FALSE(r.err_truncated);
}

TEST(Process, StdinIsDevNull) {
  auto r = run("cat; echo done");
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.out, "done\n");
}

TEST(Process, EnvOverrideAndCwd) {
  ::setenv("LONGHAUL_PROCESS_TEST_INHERITED", "inherited", 1);
  ::setenv("LONGHAUL_PROCESS_TEST_OVERRIDDEN", "old", 1);
  ProcessSpec spec;
  spec.command =
      "echo $LONGHAUL_PROCESS_TEST_INHERITED $LONGHAUL_PROCESS_TEST_OVERRIDDEN $LONGHAUL_NEW; pwd -P";
  spec.env = {{"LONGHAUL_PROCESS_TEST_OVERRIDDEN", "new"}, {"LONGHAUL_NEW", "fresh"}};
  spec.cwd = std::filesystem::canonical(std::filesystem::temp_directory_path());
  auto r = run_process(spec);
  ::unsetenv("LONGHAUL_PROCESS_TEST_INHERITED");
  ::unsetenv("LONGHAUL_PROCESS_TEST_OVERRIDDEN");
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.out, "inherited new fresh\n" + spec.cwd.string() + "\n");
}

TEST(Process, RemovedVariablesAreNotInherited) {
  ::setenv("LONGHAUL_PROCESS_TEST_SECRET", "sk-hidden", 1);
  ::setenv("LONGHAUL_PROCESS_TEST_KEPT", "kept", 1);
  ProcessSpec spec;
  spec.command = "echo \"[$LONGHAUL_PROCESS_TEST_SECRET] [$LONGHAUL_PROCESS_TEST_KEPT]\"; env | grep -c SECRET";
  spec.env_remove = {"LONGHAUL_PROCESS_TEST_SECRET"};
  auto r = run_process(spec);
  ::unsetenv("LONGHAUL_PROCESS_TEST_SECRET");
  ::unsetenv("LONGHAUL_PROCESS_TEST_KEPT");
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.out, "[] [kept]\n0\n");
}

TEST(Process, SignalDeathIsSignaled) {
  auto r = run("kill -SEGV $$");
  EXPECT_EQ(r.end, End::signaled) << to_string(r.end);
  EXPECT_EQ(r.signal, SIGSEGV);
}

TEST(Process, TimeoutKillsTheGroup) {
  auto r = run("sleep 30 & echo $!; sleep 30", 0.5);
  EXPECT_EQ(r.end, End::timed_out) << to_string(r.end);
  EXPECT_GE(r.wall_s, 0.45);
  EXPECT_LT(r.wall_s, 1.0);
  pid_t grandchild = first_pid(r.out);
  ASSERT_GT(grandchild, 1) << r.out;
  EXPECT_TRUE(gone(grandchild));
}

TEST(Process, BackgroundGrandchildHoldingThePipeDoesNotHang) {
  auto r = run("sleep 30 & echo $!", 20);
  EXPECT_EQ(r.end, End::exited) << to_string(r.end);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_LT(r.wall_s, 2.0);
  pid_t grandchild = first_pid(r.out);
  ASSERT_GT(grandchild, 1) << r.out;
  EXPECT_TRUE(gone(grandchild));
}

TEST(Process, EscapedGrandchildHoldingThePipeCostsOnlyTheGrace) {
  // setsid leaves our group, so the group kill misses it; we stop reading after a short grace.
  auto r = run("setsid sleep 5 & echo $!; sleep 0.3", 20);
  pid_t escaped = first_pid(r.out);
  ASSERT_GT(escaped, 1) << r.out;
  EXPECT_EQ(::kill(escaped, 0), 0);  // really escaped: this test is about not waiting for it
  ::kill(escaped, SIGKILL);
  EXPECT_EQ(r.end, End::exited) << to_string(r.end);
  EXPECT_GE(r.wall_s, 0.3);
  EXPECT_LT(r.wall_s, 1.5);
}

TEST(Process, ConcurrentCallsKeepTheirOutputApart) {
  std::vector<std::thread> threads;
  std::vector<ProcessResult> results(4);
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { results[i] = run("sleep 0.1; echo " + std::to_string(i)); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].end, End::exited);
    EXPECT_EQ(results[i].out, std::to_string(i) + "\n");
  }
}

TEST(Process, MemoryLimitStopsABigAllocation) {
  // dd allocates its block buffer up front; 256 MiB cannot fit in a 64 MiB address space.
  ProcessSpec spec;
  spec.command = "dd if=/dev/zero of=/dev/null bs=256M count=1";
  spec.memory_bytes = 64ull << 20;
  auto limited = run_process(spec);
  EXPECT_TRUE((limited.end == End::exited && limited.exit_code != 0) || limited.end == End::signaled)
      << to_string(limited.end) << " " << limited.exit_code << " " << limited.err;
  spec.memory_bytes = 0;  // the same command succeeds without the limit
  auto free = run_process(spec);
  EXPECT_EQ(free.end, End::exited);
  EXPECT_EQ(free.exit_code, 0) << free.err;
}

TEST(Process, CpuLimitEndsAHog) {
  ProcessSpec spec;
  spec.command = "while :; do :; done";
  spec.cpu_seconds = 1;
  spec.timeout_s = 10;
  auto r = run_process(spec);
  ASSERT_EQ(r.end, End::signaled) << to_string(r.end);
  EXPECT_TRUE(r.signal == SIGXCPU || r.signal == SIGKILL) << r.signal;
  EXPECT_GE(r.wall_s, 0.9);
  EXPECT_LT(r.wall_s, 5.0);  // 1 s of CPU; the machine may be shared
}

TEST(Process, LargeOutputKeepsTheTail) {
  ProcessSpec spec;
  spec.command = "head -c 10000000 /dev/zero | tr '\\0' a; printf END; head -c 3000 /dev/zero >&2";
  spec.keep_bytes = 1000;
  auto r = run_process(spec);
  EXPECT_EQ(r.end, End::exited);
  ASSERT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.out_truncated);
  EXPECT_EQ(r.out.substr(997), "END");
  EXPECT_EQ(r.out.substr(0, 997), std::string(997, 'a'));
  EXPECT_EQ(r.err.size(), 1000u);
  EXPECT_TRUE(r.err_truncated);
}

TEST(Process, ExactlyKeepBytesIsNotTruncated) {
  ProcessSpec spec;
  spec.command = "printf 12345";
  spec.keep_bytes = 5;
  auto r = run_process(spec);
  EXPECT_EQ(r.out, "12345");
  EXPECT_FALSE(r.out_truncated);
}

TEST(Process, CancelFlagEndsTheRun) {
  std::atomic<bool> cancel{false};
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  ProcessSpec spec;
  spec.command = "sleep 30";
  spec.timeout_s = 30;
  auto r = run_process(spec, &cancel);
  stopper.join();
  EXPECT_EQ(r.end, End::cancelled) << to_string(r.end);
  EXPECT_LT(r.wall_s, 1.5);
}

TEST(Process, MissingCwdFailsToStart) {
  ProcessSpec spec;
  spec.command = "true";
  spec.cwd = "/nonexistent/longhaul/process_test";
  auto r = run_process(spec);
  EXPECT_EQ(r.end, End::failed_to_start);
  EXPECT_FALSE(r.error.empty());
}

TEST(Process, NoDescriptorLeaksIntoTheChild) {
  // A distinctive file, opened deliberately without O_CLOEXEC, at a low and at a high number.
  auto path = std::filesystem::temp_directory_path() /
              ("lh_process_leak_" + std::to_string(::getpid()));
  { std::ofstream(path) << "x"; }
  int low = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(low, 0);
  ASSERT_EQ(::dup2(low, 77), 77);
  auto r = run("ls -l /proc/self/fd");
  ::close(low);
  ::close(77);
  std::filesystem::remove(path);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_EQ(r.out.find(path.filename().string()), std::string::npos) << r.out;
  // Besides 0-2, only the directory ls opened to list /proc/self/fd.
  std::set<int> fds;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    auto arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    auto name_start = line.rfind(' ', arrow - 1) + 1;
    fds.insert(std::stoi(line.substr(name_start, arrow - name_start)));
  }
  EXPECT_TRUE(fds.count(0) && fds.count(1) && fds.count(2)) << r.out;
  EXPECT_FALSE(fds.count(77)) << r.out;
  EXPECT_LE(fds.size(), 4u) << r.out;
  for (int fd : fds) EXPECT_LE(fd, 3) << r.out;
}

TEST(Process, SignalMaskAndIgnoredSignalsAreReset) {
  // The parent ignores SIGTERM and blocks SIGUSR1; the child must see neither.
  struct sigaction ign {}, old_term {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ign, &old_term);
  sigset_t usr1, old_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &usr1, &old_mask);
  auto r = run("grep -E '^(SigBlk|SigIgn)' /proc/self/status");
  ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  EXPECT_EQ(r.end, End::exited);
  EXPECT_NE(r.out.find("SigBlk:\t0000000000000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SigIgn:\t0000000000000000"), std::string::npos) << r.out;
}

std::atomic<int> g_sigints{0};
void count_sigint(int) { g_sigints++; }

TEST(Process, ParentSigintHandlerInterruptsNothing) {
  struct sigaction sa {}, old {};
  sa.sa_handler = count_sigint;  // no SA_RESTART: poll and read see EINTR
  ::sigaction(SIGINT, &sa, &old);
  std::thread poker([] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40));
      ::kill(::getpid(), SIGINT);
    }
  });
  auto r = run("sleep 0.3; echo ok");
  poker.join();
  ::sigaction(SIGINT, &old, nullptr);
  EXPECT_EQ(r.end, End::exited) << to_string(r.end);
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_GE(g_sigints.load(), 1);
}

TEST(Process, CoreDumpsAreOff) {
  auto r = run("ulimit -c");
  EXPECT_EQ(r.out, "0\n");
}

TEST(Process, EndNames) {
  EXPECT_STREQ(to_string(End::exited), "exited");
  EXPECT_STREQ(to_string(End::signaled), "signaled");
  EXPECT_STREQ(to_string(End::timed_out), "timed_out");
  EXPECT_STREQ(to_string(End::cancelled), "cancelled");
  EXPECT_STREQ(to_string(End::failed_to_start), "failed_to_start");
}

}  // namespace
}  // namespace longhaul
