// hostile_cases_test.cpp: the hostile cases that need more than one file or more than a file
// (an export and its checkpoint, an index and its shards, a config beside the weights, options),
// replayed under the hostile-file bound. Each folder of tests/fuzz/regressions-cases is one case:
//
//   args     one line: the arguments to `headcount`, split at spaces, run in a copy of the folder
//   expect   optional, one check a line:
//              exit N           the exit code
//              stdout: TEXT     stdout holds TEXT      stdout-not: TEXT   stdout does not hold TEXT
//              stderr: TEXT     stderr holds TEXT      stderr-not: TEXT   stderr does not hold TEXT
//   the rest the inputs (symlinks inside the folder are kept as symlinks)
//
// The folder's files add up to less than 1 MB: the README's bound is about files of that size.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "hostile_run.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> case_folders() {
  std::vector<fs::path> out;
  const fs::path root = fs::path(HEADCOUNT_FUZZ_DIR) / "regressions-cases";
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The case's files add up to under 1 MB (symlinks count as themselves, not their targets).
uintmax_t folder_bytes(const fs::path& dir) {
  uintmax_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_symlink()) continue;
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

void check_expectations(const fs::path& expect, const hostile::Outcome& o) {
  std::ifstream in(expect);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    INFO("expect: " << line << "\nstdout:\n" << o.out << "\nstderr:\n" << o.err);
    auto after = [&](const std::string& key) { return line.substr(key.size()); };
    if (line.rfind("exit ", 0) == 0) {
      CHECK(o.exit_code == std::stoi(after("exit ")));
    } else if (line.rfind("stdout: ", 0) == 0) {
      CHECK(o.out.find(after("stdout: ")) != std::string::npos);
    } else if (line.rfind("stdout-not: ", 0) == 0) {
      CHECK(o.out.find(after("stdout-not: ")) == std::string::npos);
    } else if (line.rfind("stderr: ", 0) == 0) {
      CHECK(o.err.find(after("stderr: ")) != std::string::npos);
    } else if (line.rfind("stderr-not: ", 0) == 0) {
      CHECK(o.err.find(after("stderr-not: ")) == std::string::npos);
    } else {
      FAIL_CHECK("an expect line this test does not know");
    }
  }
}

}  // namespace

TEST_CASE("hostile case folders run within the hostile-file bound and say what they must", "[fuzz][hostile]") {
  const auto folders = case_folders();
  REQUIRE(!folders.empty());
  for (const fs::path& dir : folders) {
    INFO(dir.filename().string());
    CHECK(folder_bytes(dir) < (1u << 20));
    std::ifstream args_in(dir / "args");
    std::string line;
    std::getline(args_in, line);
    REQUIRE(!line.empty());
    testutil::TempDir work;
    fs::copy(dir, work.path, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    hostile::Outcome o = hostile::run(words(line), work.path.string());
    hostile::check_bound(o);
    if (fs::exists(dir / "expect")) check_expectations(dir / "expect", o);
  }
}
