// fuzz_replay_test.cpp: every file of the fuzz corpus, every regression file and every sample go
// through the fuzz harnesses' own check (fuzz/fuzz_target.h: all output formats, all gates,
// explain) in the normal build, one forked child per file so that a signal is attributed to its
// file. Each child must exit cleanly and stay within the memory bound the README states.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"

namespace {

constexpr long kMaxRssKiB = 256 * 1024;  // README: a model file under 1 MB audits within 256 MiB
constexpr rlim_t kCpuGuardSeconds = 30;  // a hang guard, far above the 2 s the README states

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".onnx" || e.path().filename().string().rfind("crash-", 0) == 0) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct ChildResult {
  int status = 0;
  long max_rss_kib = 0;
};

// Replays one file in a forked child: run_all aborts on any broken contract.
ChildResult replay(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  pid_t pid = fork();
  if (pid == 0) {
    rlimit cpu{kCpuGuardSeconds, kCpuGuardSeconds};
    setrlimit(RLIMIT_CPU, &cpu);
    fuzz::run_all(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    _exit(0);
  }
  ChildResult r;
  rusage usage{};
  wait4(pid, &r.status, 0, &usage);
  r.max_rss_kib = usage.ru_maxrss;
  return r;
}

void replay_all(const std::string& dir) {
  auto files = files_in(dir);
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    INFO(f);
    ChildResult r = replay(f);
    CHECK(WIFEXITED(r.status));
    if (WIFSIGNALED(r.status)) FAIL_CHECK("killed by signal " << WTERMSIG(r.status));
    CHECK(WEXITSTATUS(r.status) == 0);
#ifndef HEADCOUNT_SANITIZED  // ASan's shadow memory is not the tool's
    CHECK(r.max_rss_kib <= kMaxRssKiB);
#endif
  }
}

}  // namespace

TEST_CASE("fuzz regression files: each crash or blow-up of an earlier build audits cleanly", "[fuzz]") {
  replay_all(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions");
}

TEST_CASE("fuzz seed corpus replays cleanly", "[fuzz]") { replay_all(std::string(HEADCOUNT_FUZZ_DIR) + "/corpus"); }

TEST_CASE("samples replay cleanly through the fuzz harness", "[fuzz]") { replay_all(HEADCOUNT_SAMPLES_DIR); }
