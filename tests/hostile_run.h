// hostile_run.h: runs hostile input in a child process under the README's hostile-file bound
// (exit 0, 1 or 2, never a signal, within 2 s of CPU time and 256 MiB), with a wall-clock guard
// that turns a hang into a failure instead of a stuck suite. Used by the case folders of
// tests/fuzz/regressions-cases (hostile_cases_test.cpp) and by tests that make inputs a committed
// folder cannot hold: FIFOs, sparse files, a file swapped while it is read.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace hostile {

constexpr double kMaxCpuSeconds = 2;      // README: a hostile file under 1 MB audits within 2 s
constexpr long kMaxRssKiB = 256 * 1024;   // README: ... and 256 MiB
constexpr rlim_t kCpuGuardSeconds = 30;   // a spin guard, far above the bound
constexpr double kWallGuardSeconds = 20;  // a hang guard (a blocked open uses no CPU)

struct Outcome {
  bool exited = false;     // exited by itself (not killed by a signal or by the guard)
  int exit_code = -1;
  int signal = 0;          // the signal that ended it, if one did
  bool hung = false;       // still running after the wall guard, then killed
  double cpu_seconds = 0;  // user + system: other work on the machine does not add to it
  long max_rss_kib = 0;
  std::string out, err;    // what the headcount binary printed (run() only)
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Waits for `pid` up to `wall_seconds`, then kills it; fills the status and the child's usage.
inline void reap(pid_t pid, double wall_seconds, Outcome& o) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(wall_seconds);
  int status = 0;
  rusage usage{};
  for (;;) {
    pid_t r = wait4(pid, &status, WNOHANG, &usage);
    if (r == pid) break;
    if (r < 0) return;
    if (std::chrono::steady_clock::now() > end) {
      o.hung = true;
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  o.exited = !o.hung && WIFEXITED(status);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.signal = WIFSIGNALED(status) && !o.hung ? WTERMSIG(status) : 0;
  o.max_rss_kib = usage.ru_maxrss;
  o.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// `work` in a forked child (its return value is the exit code) under the CPU and wall guards.
inline Outcome in_child(const std::function<int()>& work, double wall_seconds = kWallGuardSeconds) {
  pid_t pid = fork();
  if (pid == 0) {
    rlimit cpu{kCpuGuardSeconds, kCpuGuardSeconds};
    setrlimit(RLIMIT_CPU, &cpu);
    _exit(work());
  }
  Outcome o;
  reap(pid, wall_seconds, o);
  return o;
}

// The headcount binary with `args`, in folder `cwd`, stdin from /dev/null.
inline Outcome run(const std::vector<std::string>& args, const std::string& cwd,
                   double wall_seconds = kWallGuardSeconds) {
  char tmpl[] = "/tmp/headcount-run-XXXXXX";
  const std::string dir = mkdtemp(tmpl) ? tmpl : "/tmp";
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  pid_t pid = fork();
  if (pid == 0) {
    rlimit cpu{kCpuGuardSeconds, kCpuGuardSeconds};
    setrlimit(RLIMIT_CPU, &cpu);
    if (chdir(cwd.c_str()) != 0) _exit(120);
    int in = open("/dev/null", O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) _exit(121);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv;
    std::string bin = HEADCOUNT_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(122);
  }
  Outcome o;
  reap(pid, wall_seconds, o);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return o;
}

// The bound every hostile input is held to: no hang, no signal, exit 0-2, within 256 MiB and
// (in the Release build without sanitizers, which the README times) 2 s of CPU time. For a run of
// the binary: every stderr line is headcount's own, and exit 2 says why in an error line.
inline void check_bound(const Outcome& o, bool binary = true) {
  INFO("exit " << o.exit_code << ", signal " << o.signal << ", " << o.cpu_seconds << " s of CPU, "
               << o.max_rss_kib << " KiB; stderr:\n" << o.err);
  CHECK_FALSE(o.hung);
  CHECK(o.signal == 0);
  CHECK(o.exited);
  CHECK(o.exit_code >= 0);
  CHECK(o.exit_code <= 2);
#ifndef HEADCOUNT_SANITIZED  // ASan's shadow memory is not the tool's
  CHECK(o.max_rss_kib <= kMaxRssKiB);
#endif
#if defined(NDEBUG) && !defined(HEADCOUNT_SANITIZED)  // the README times the Release build
  CHECK(o.cpu_seconds <= kMaxCpuSeconds);
#endif
  if (!binary) return;
  std::istringstream lines(o.err);
  for (std::string line; std::getline(lines, line);) {
    INFO(line);
    CHECK(line.rfind("headcount: ", 0) == 0);
  }
  if (o.exit_code == 2) CHECK(o.err.find("headcount: error: ") != std::string::npos);
}

}  // namespace hostile
