// fuzz_replay_test.cpp: every file of the fuzz corpus, every regression file and every sample go
// through the fuzz harnesses' own check (fuzz/fuzz_target.h: all output formats, all gates,
// explain) in the normal build, one forked child per file so that a signal is attributed to its
// file. Each child must exit cleanly and stay within the memory bound the README states; in the
// Release build, each file under 1 MB is also audited once on its own (`headcount audit FILE`),
// within the README's time bound. The GGUF corpus and regressions go through the fuzz_gguf
// harness's check (fuzz/gguf_target.h) the same way.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz/fuzz_target.h"
#include "fuzz/fidelity_target.h"
#include "fuzz/gguf_target.h"

namespace {

constexpr long kMaxRssKiB = 256 * 1024;  // README: a model file under 1 MB audits within 256 MiB
constexpr rlim_t kCpuGuardSeconds = 30;  // a hang guard, far above the 2 s the README states
constexpr double kMaxAuditSeconds = 2;   // README: a model file under 1 MB audits within 2 s
constexpr uintmax_t kBoundedSize = 1 << 20;  // the files the README's bounds are about

std::vector<std::string> files_in(const std::string& dir, const std::string& extension = ".onnx") {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == extension || e.path().filename().string().rfind("crash-", 0) == 0) {
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct ChildResult {
  int status = 0;
  long max_rss_kib = 0;
  double cpu_seconds = 0;  // user and system time: other work on the machine does not add to it
};

// Runs `work` in a forked child under the CPU guard.
template <typename Work>
ChildResult in_child(Work work) {
  pid_t pid = fork();
  if (pid == 0) {
    rlimit cpu{kCpuGuardSeconds, kCpuGuardSeconds};
    setrlimit(RLIMIT_CPU, &cpu);
    work();
    _exit(0);
  }
  ChildResult r;
  rusage usage{};
  wait4(pid, &r.status, 0, &usage);
  r.max_rss_kib = usage.ru_maxrss;
  r.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  return r;
}

// Writes the bytes where the harness audits them: a private folder, so external-data locations
// resolve next to the file and nowhere else.
std::string write_scratch(const std::string& bytes) {
  const std::string path = fuzz::scratch_model();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// One `headcount audit FILE` as the command line makes it, rendered as text: the run the
// README's time bound is about (run_all audits twice and renders every format).
void audit_once(const std::string& bytes) {
  headcount::AuditRequest request;
  request.inputs = {write_scratch(bytes)};
  headcount::Run run = headcount::run_audit(request);
  std::ostringstream out;
  headcount::render(run, headcount::RenderOptions(), out);
}

// The child's scratch folder, which each forked child makes anew.
void remove_scratch() { std::filesystem::remove_all(std::filesystem::path(fuzz::scratch_model()).parent_path()); }

// One input through a harness (fuzz_target.h, gguf_target.h) in a child: it exits cleanly, within
// the memory bound.
void replay_one(const std::string& bytes, void (*harness)(const uint8_t*, size_t)) {
  ChildResult r = in_child([&] {
    harness(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    remove_scratch();
  });
  CHECK(WIFEXITED(r.status));
  if (WIFSIGNALED(r.status)) FAIL_CHECK("killed by signal " << WTERMSIG(r.status));
  CHECK(WEXITSTATUS(r.status) == 0);
#ifndef HEADCOUNT_SANITIZED  // ASan's shadow memory is not the tool's
  CHECK(r.max_rss_kib <= kMaxRssKiB);
#endif
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void replay_all(const std::string& dir) {
  auto files = files_in(dir);
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    INFO(f);
    const std::string bytes = read_bytes(f);
    replay_one(bytes, fuzz::run_all);
#if defined(NDEBUG) && !defined(HEADCOUNT_SANITIZED)  // the README times the Release build
    if (bytes.size() < kBoundedSize) {
      ChildResult once = in_child([&] {
        audit_once(bytes);
        remove_scratch();
      });
      CHECK(WIFEXITED(once.status));
      INFO("one audit: " << once.cpu_seconds << " s of CPU time, " << once.max_rss_kib << " KiB");
      CHECK(once.cpu_seconds <= kMaxAuditSeconds);
    }
#endif
  }
}

// Each GGUF file read as the fuzz_gguf harness reads it, in a child within the memory bound.
void replay_gguf(const std::string& dir) {
  auto files = files_in(dir, ".gguf");
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    INFO(f);
    replay_one(read_bytes(f), fuzz::run_gguf);
  }
}

// Each export-and-checkpoint pair (fidelity_target.h) compared as the fuzz_fidelity harness
// compares it, in a child within the memory bound.
void replay_fidelity(const std::string& dir) {
  auto files = files_in(dir, ".pair");
  REQUIRE(!files.empty());
  for (const auto& f : files) {
    INFO(f);
    replay_one(read_bytes(f), fuzz::run_fidelity);
  }
}

}  // namespace

TEST_CASE("export-check fuzz corpus: each export and checkpoint pair compares cleanly", "[fuzz][fidelity]") {
  replay_fidelity(std::string(HEADCOUNT_FUZZ_DIR) + "/corpus-fidelity");
}

TEST_CASE("GGUF fuzz corpus and regression files read cleanly", "[fuzz][gguf]") {
  replay_gguf(std::string(HEADCOUNT_FUZZ_DIR) + "/corpus-gguf");
  replay_gguf(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions-gguf");
}

TEST_CASE("fuzz regression files: each crash or blow-up of an earlier build audits cleanly", "[fuzz]") {
  replay_all(std::string(HEADCOUNT_FUZZ_DIR) + "/regressions");
}

TEST_CASE("fuzz seed corpus replays cleanly", "[fuzz]") { replay_all(std::string(HEADCOUNT_FUZZ_DIR) + "/corpus"); }

TEST_CASE("samples replay cleanly through the fuzz harness", "[fuzz]") { replay_all(HEADCOUNT_SAMPLES_DIR); }
