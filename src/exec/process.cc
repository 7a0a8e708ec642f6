// run_process: fork + exec of `/bin/sh -c command` in its own process group, with limits, captured
// output tails, a timeout and cancellation; the group is always SIGKILLed before we return.
//
// Between fork and exec the child makes only async-signal-safe calls (plain syscalls), because the
// parent may be multi-threaded (SQLite, worker threads): everything it needs is prepared before fork.
// Exec failures reach the parent through a close-on-exec "status" pipe: no data = exec succeeded.
//
// Exit codes are reported exactly as /bin/sh returns them. A shell that reports a child's death by
// signal N as exit code 128+N stays End::exited with that code; only a direct death by signal (sh
// itself, or the command sh exec'd in place of itself) is End::signaled.
#include "exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

extern char** environ;

namespace longhaul {
namespace {

using Clock = std::chrono::steady_clock;

// After the direct child has exited (or the group was killed), how long we keep reading pipes that
// something outside the group may still hold open.
constexpr auto kDrainGrace = std::chrono::milliseconds(250);
// Longest poll() sleep: bounds how late we notice *cancel.
constexpr int kPollMs = 25;

// Keeps only the last `keep` bytes of a stream, trimming in amortized O(1) per byte.
struct Tail {
  std::string buf;
  size_t keep = 0;
  bool truncated = false;

  void add(const char* data, size_t n) {
    if (n == 0) return;
    if (keep == 0) {
      truncated = true;
      return;
    }
    if (n >= keep) {
      if (!buf.empty() || n > keep) truncated = true;
      buf.assign(data + (n - keep), keep);
      return;
    }
    buf.append(data, n);
    if (buf.size() > keep + std::max<size_t>(keep, 64 * 1024)) trim();
  }
  void trim() {
    if (buf.size() > keep) {
      buf.erase(0, buf.size() - keep);
      truncated = true;
    }
  }
};

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Moves a descriptor to >= 3 (close-on-exec), so that the child's dup2 onto 0/1/2 cannot clobber
// another of our pipe ends when the parent runs with a standard descriptor closed.
bool lift_fd(int& fd) {
  if (fd >= 3) return true;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return false;
  ::close(fd);
  fd = moved;
  return true;
}

bool make_pipe(int fds[2]) {
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  if (!lift_fd(fds[0]) || !lift_fd(fds[1])) {
    close_fd(fds[0]);
    close_fd(fds[1]);
    return false;
  }
  return true;
}

std::string errno_text(const char* what, int err) { return std::string(what) + ": " + std::strerror(err); }

// The child's side, async-signal-safe only. Reports a failure as (stage, errno) on status_w.
struct ChildPlan {
  const char* cwd = nullptr;  // null: inherit
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  int devnull = -1, out_w = -1, err_w = -1, status_w = -1;
  bool set_as = false, set_cpu = false;
  rlimit as{}, cpu{};
};

enum ChildStage : int { kStageChdir = 1, kStageStdio, kStageRlimit, kStageExec };

[[noreturn]] void child_fail(int status_w, int stage) {
  int msg[2] = {stage, errno};
  ssize_t ignored = ::write(status_w, msg, sizeof msg);
  (void)ignored;
  ::_exit(127);
}

[[noreturn]] void child_main(const ChildPlan& p) {
  ::setpgid(0, 0);
  // Dispositions first, while every signal is still blocked (the parent blocked them around fork),
  // so that none of the parent's handlers can run in the child.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) ::sigaction(sig, &dfl, nullptr);  // SIGKILL/STOP: EINVAL
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  if (p.cwd && ::chdir(p.cwd) != 0) child_fail(p.status_w, kStageChdir);
  if (::dup2(p.devnull, 0) < 0 || ::dup2(p.out_w, 1) < 0 || ::dup2(p.err_w, 2) < 0)
    child_fail(p.status_w, kStageStdio);
  // Every other descriptor goes at exec (the status pipe must live until then).
  if (::close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) != 0) {
    for (int fd = 3; fd < 65536; ++fd)
      if (fd != p.status_w) ::close(fd);
  }
  rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);  // lowering never fails for lack of privilege
  if (p.set_as && ::setrlimit(RLIMIT_AS, &p.as) != 0) child_fail(p.status_w, kStageRlimit);
  if (p.set_cpu && ::setrlimit(RLIMIT_CPU, &p.cpu) != 0) child_fail(p.status_w, kStageRlimit);
  ::execve(p.argv[0], p.argv, p.envp);
  child_fail(p.status_w, kStageExec);
}

// Builds a limit no higher than the current hard limit (an unprivileged process cannot raise it).
rlimit clamp_limit(int resource, rlim_t soft, rlim_t hard) {
  rlimit cur{};
  if (::getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
    hard = std::min(hard, cur.rlim_max);
    soft = std::min(soft, hard);
  }
  return {soft, hard};
}

// Non-blocking read of whatever is available; closes fd at EOF or on error.
void drain(int& fd, Tail& tail) {
  char buf[64 * 1024];
  for (int i = 0; i < 64 && fd >= 0; ++i) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      tail.add(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    close_fd(fd);  // EOF or a real error
  }
}

// True once `pid` has exited; leaves it a zombie (WNOWAIT) so its pid and pgid cannot be reused
// before we have signalled the group.
bool has_exited(pid_t pid) {
  siginfo_t info{};
  for (;;) {
    int rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if (rc == 0) return info.si_pid == pid;
    if (errno == EINTR) continue;
    return true;  // ECHILD (e.g. SIGCHLD ignored and auto-reaped): nothing left to wait for
  }
}

// Reaps pid; false if it was already gone.
bool reap(pid_t pid, int* status) {
  for (;;) {
    pid_t r = ::waitpid(pid, status, 0);
    if (r == pid) return true;
    if (r < 0 && errno == EINTR) continue;
    return false;
  }
}

}  // namespace

const char* to_string(ProcessResult::End end) {
  switch (end) {
    case ProcessResult::End::exited: return "exited";
    case ProcessResult::End::signaled: return "signaled";
    case ProcessResult::End::timed_out: return "timed_out";
    case ProcessResult::End::cancelled: return "cancelled";
    case ProcessResult::End::failed_to_start: return "failed_to_start";
  }
  return "unknown";
}

ProcessResult run_process(const ProcessSpec& spec, const std::atomic<bool>* cancel) {
  using End = ProcessResult::End;
  ProcessResult res;
  const auto start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  auto fail = [&](std::string why) {
    res.end = End::failed_to_start;
    res.error = std::move(why);
    res.wall_s = elapsed();
    return res;
  };

  // Everything the child needs, prepared before fork.
  std::string cwd = spec.cwd.string();
  if (!cwd.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(spec.cwd, ec))
      return fail("working directory " + cwd + " does not exist or is not a directory");
  }
  std::map<std::string, std::string> env_over = spec.env;
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos && env_over.count(entry.substr(0, eq))) continue;
    if (eq != std::string::npos &&
        std::find(spec.env_remove.begin(), spec.env_remove.end(), entry.substr(0, eq)) != spec.env_remove.end())
      continue;
    env_strings.push_back(std::move(entry));
  }
  for (const auto& [k, v] : env_over) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", command = spec.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};

  ChildPlan plan;
  plan.cwd = cwd.empty() ? nullptr : cwd.c_str();
  plan.argv = argv;
  plan.envp = envp.data();
  if (spec.memory_bytes > 0) {
    plan.set_as = true;
    plan.as = clamp_limit(RLIMIT_AS, spec.memory_bytes, spec.memory_bytes);
  }
  if (spec.cpu_seconds > 0) {
    // SIGXCPU at the soft limit, SIGKILL one second later if the child ignores or catches it.
    auto secs = static_cast<rlim_t>(std::ceil(spec.cpu_seconds));
    plan.set_cpu = true;
    plan.cpu = clamp_limit(RLIMIT_CPU, secs, secs + 1);
  }

  int out[2] = {-1, -1}, err[2] = {-1, -1}, status[2] = {-1, -1};
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  auto close_all = [&] {
    for (int* fd : {&out[0], &out[1], &err[0], &err[1], &status[0], &status[1], &devnull}) close_fd(*fd);
  };
  if (devnull < 0 || !lift_fd(devnull)) {
    int e = errno;
    close_all();
    return fail(errno_text("open /dev/null", e));
  }
  if (!make_pipe(out) || !make_pipe(err) || !make_pipe(status)) {
    int e = errno;
    close_all();
    return fail(errno_text("pipe", e));
  }
  plan.devnull = devnull;
  plan.out_w = out[1];
  plan.err_w = err[1];
  plan.status_w = status[1];

  // Block every signal across fork so the child cannot run one of our handlers before resetting.
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = ::fork();
  if (pid == 0) child_main(plan);
  int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) {
    close_all();
    return fail(errno_text("fork", fork_errno));
  }
  // Both sides set the group, so it exists whichever runs first. EACCES here means the child has
  // already exec'd, which it does only after its own setpgid.
  ::setpgid(pid, pid);
  const pid_t pgid = pid;
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(status[1]);
  close_fd(devnull);

  // Did exec succeed? The status pipe closes on exec, or carries (stage, errno).
  int msg[2] = {0, 0};
  ssize_t got;
  do got = ::read(status[0], msg, sizeof msg);
  while (got < 0 && errno == EINTR);
  close_fd(status[0]);
  if (got == static_cast<ssize_t>(sizeof msg)) {
    ::kill(-pgid, SIGKILL);
    int st = 0;
    reap(pid, &st);
    close_all();
    const char* stage = msg[0] == kStageChdir    ? "chdir"
                        : msg[0] == kStageStdio  ? "redirect stdio"
                        : msg[0] == kStageRlimit ? "setrlimit"
                                                 : "exec /bin/sh";
    return fail(errno_text(stage, msg[1]) + (msg[0] == kStageChdir ? " (" + cwd + ")" : ""));
  }

  ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, ::fcntl(err[0], F_GETFL) | O_NONBLOCK);
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));  // -1 on old kernels: we poll

  Tail out_tail{{}, spec.keep_bytes}, err_tail{{}, spec.keep_bytes};
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, spec.timeout_s)));
  bool exited = false, killed = false;
  Clock::time_point grace_end{};
  End end = End::exited;
  auto kill_group = [&](Clock::time_point now) {
    ::kill(-pgid, SIGKILL);
    if (!killed) grace_end = now + kDrainGrace;
    killed = true;
  };

  for (;;) {
    auto now = Clock::now();
    if (!exited && has_exited(pid)) {
      exited = true;
      // The step is over: whatever sh left in the background goes with it.
      kill_group(now);
    }
    if (!killed) {
      if (now >= deadline) {
        end = End::timed_out;
        kill_group(now);
      } else if (cancel && cancel->load()) {
        end = End::cancelled;
        kill_group(now);
      }
    }
    if (exited && out[0] < 0 && err[0] < 0) break;
    if (exited && killed && now >= grace_end) break;  // a pipe held by something outside the group

    // Sleep until data, the child's exit (pidfd), the next deadline, or the next *cancel check.
    auto ms_until = [&](Clock::time_point t) {
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
      return static_cast<int>(std::clamp<long long>(ms, 0, kPollMs));
    };
    int wait_ms = kPollMs;
    if (!killed) wait_ms = ms_until(deadline);
    else if (exited) wait_ms = ms_until(grace_end);
    pollfd pfds[3];
    int n = 0, out_i = -1, err_i = -1;
    if (out[0] >= 0) out_i = n, pfds[n++] = {out[0], POLLIN, 0};
    if (err[0] >= 0) err_i = n, pfds[n++] = {err[0], POLLIN, 0};
    if (pidfd >= 0 && !exited) pfds[n++] = {pidfd, POLLIN, 0};
    else if (!exited) wait_ms = std::min(wait_ms, 5);  // no pidfd: only waitid tells us
    int rc = ::poll(pfds, static_cast<nfds_t>(n), wait_ms);
    if (rc < 0 && errno != EINTR) {
      // Should not happen; don't spin. Kill the group and leave with what we have.
      if (!killed) kill_group(Clock::now());
      grace_end = Clock::now();
    }
    if (rc > 0) {
      if (out_i >= 0 && pfds[out_i].revents) drain(out[0], out_tail);
      if (err_i >= 0 && pfds[err_i].revents) drain(err[0], err_tail);
    }
  }

  ::kill(-pgid, SIGKILL);  // always: nothing of the group outlives the step
  int st = 0;
  bool reaped = reap(pid, &st);
  res.wall_s = elapsed();
  close_fd(out[0]);
  close_fd(err[0]);
  if (pidfd >= 0) ::close(pidfd);
  out_tail.trim();
  err_tail.trim();
  res.out = std::move(out_tail.buf);
  res.err = std::move(err_tail.buf);
  res.out_truncated = out_tail.truncated;
  res.err_truncated = err_tail.truncated;
  res.end = end;
  if (reaped) {
    if (WIFEXITED(st)) res.exit_code = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) res.signal = WTERMSIG(st);
    if (end == End::exited && WIFSIGNALED(st)) res.end = End::signaled;
  } else if (end == End::exited) {
    res.error = "exit status lost (child already reaped elsewhere; is SIGCHLD ignored?)";
  }
  return res;
}

}  // namespace longhaul
