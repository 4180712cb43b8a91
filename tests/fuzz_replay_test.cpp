// fuzz_replay_test.cpp: every file of the fuzz corpus, every regression file and every sample go
// through the fuzz harnesses' own check (fuzz/fuzz_target.h: all output formats, all gates,
// explain) in the normal build, one forked child per file so that a signal is attributed to its
// file. Each child must exit cleanly and stay within the memory bound the README states; in the
// Release build, each file under 1 MB is also audited once on its own (`headcount audit FILE`),
// within the README's time bound. The GGUF corpus and regressions go through the fuzz_gguf
// harness's check (fuzz/gguf_target.h) the same way.
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
#include "hostile_run.h"

namespace {

constexpr uintmax_t kBoundedSize = 1 << 20;  // the files the README's bounds are about (hostile_run.h)
// A child that runs every format, gate and explain of a sample may take long under the sanitizers
// and a loaded machine: the wall guard is only for a hang (hostile_run.h's CPU guard still holds).
constexpr double kReplayWallSeconds = 300;

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

// Runs `work` in a forked child under hostile_run.h's CPU guard and the replay's wall guard.
template <typename Work>
hostile::Outcome in_child(Work work) {
  return hostile::in_child(
      [&] {
        work();
        return 0;
      },
      kReplayWallSeconds);
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
  hostile::Outcome r = in_child([&] {
    harness(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    remove_scratch();
  });
  CHECK_FALSE(r.hung);
  CHECK(r.exited);
  if (r.signal) FAIL_CHECK("killed by signal " << r.signal);
  CHECK(r.exit_code == 0);
#ifndef HEADCOUNT_SANITIZED  // ASan's shadow memory is not the tool's
  CHECK(r.max_rss_kib <= hostile::kMaxRssKiB);
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
      hostile::Outcome once = in_child([&] {
        audit_once(bytes);
        remove_scratch();
      });
      CHECK(once.exited);
      INFO("one audit: " << once.cpu_seconds << " s of CPU time, " << once.max_rss_kib << " KiB");
      CHECK(once.cpu_seconds <= hostile::kMaxCpuSeconds);
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
