// fuzz_target.h: what every fuzz input goes through, shared by the libFuzzer harnesses and the
// corpus replay test of the normal build.
//
// The bytes are written to a model file in a private folder and audited the way `headcount audit`
// does it after parsing its options (run_audit, report_problems, exit_code in headcount/runner.h),
// with every gate on; the run is rendered in every output format, and every block (up to 8) is
// derived as `explain MODEL --block N` does; then the same bytes are audited from memory
// (audit_bytes, as the Python module reads them) and must give the same audit. Anything but exit
// code 0, 1 or 2, an error that is not one `headcount: ...` line, a difference between the two
// reads, or an exception escaping the library aborts: that is a finding.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "headcount/checkpoint.h"
#include "headcount/diff.h"
#include "headcount/error.h"
#include "headcount/explain.h"
#include "headcount/fidelity.h"
#include "headcount/render.h"
#include "headcount/run.h"
#include "headcount/runner.h"

namespace fuzz {

// The file this process audits: a folder of its own, so external-data locations in the input
// resolve next to it and nowhere else.
inline std::string scratch_model() {
  static std::string path;
  static pid_t owner = -1;
  if (owner != getpid()) {  // made again after a fork: each replayed child writes its own file
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : std::filesystem::temp_directory_path().string();
    std::string tmpl = base + "/headcount-fuzz-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    path = tmpl + "/model.onnx";
    owner = getpid();
  }
  return path;
}

inline void fail(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "fuzz: %s\n%s\n", what.c_str(), detail.c_str());
  std::abort();
}

// The exit code and stderr of one command: 0, 1 or 2, and why on stderr in "headcount: " lines.
inline void check_exit(const std::string& command, int code, const std::string& err) {
  if (code < 0 || code > 2) fail("headcount " + command + ": exit code " + std::to_string(code), err);
  std::istringstream lines(err);
  bool error_line = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("headcount: ", 0) != 0) fail("headcount " + command + ": a stderr line does not start with 'headcount: '", err);
    error_line = error_line || line.rfind("headcount: error: ", 0) == 0;
  }
  if (code == 2 && !error_line) fail("headcount " + command + ": exit code 2 without a 'headcount: error:' line", err);
}

// Every fuzz input: one audit with every gate, the CLI's error lines and exit code, every format,
// and the derivation of each block.
inline void run_all(const uint8_t* data, size_t size) {
  using namespace headcount;
  const std::string path = scratch_model();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  AuditRequest request;
  request.inputs = {path};
  for (const BudgetGate& gate : budget_gates()) {  // every row of the table: a new gate is fuzzed too
    request.gates.budget.limits[gate.id] = gate.unit == BudgetUnit::Heads ? 4 : gate.unit == BudgetUnit::Bytes ? 1000000 : 1000;
  }
  request.gates.fail_on = Severity::Info;
  Run run = run_audit(request);

  std::ostringstream err;
  report_problems(run, err);
  check_exit("audit " + path + " (every gate)", exit_code(run), err.str());

  for (const FormatInfo& format : formats()) {  // every row of the registry: a new format is fuzzed too
    RenderOptions options;
    options.format = format.format;
    std::ostringstream out;
    render(run, options, out);
  }
  if (const auto& audit = run.files.at(0).audit) {
    size_t blocks = std::min<size_t>(audit->attention.blocks.size(), 8);
    for (size_t i = 0; i < blocks; ++i) explain_block(*audit, static_cast<int>(i));
    // headcount diff of the model with itself and with an empty one, in every diff format.
    // And as the export of itself: every tensor it holds is found (kept or folded; unknown when
    // its values cannot be read), never lost or changed; every format prints the comparison.
    Diff self = compare_sides(diff_side(path, *audit), diff_side(path, *audit));
    self.fidelity = check_fidelity(*audit, path, *audit, path);
    const Fidelity& f = *self.fidelity;
    uint64_t parameters = 0;
    for (const auto& w : audit->model.weights) {
      // A checkpoint's integer tensors are stored and counted, but buffers: not compared.
      const bool integers = audit->model.checkpoint && w.dtype != 0 && !dtype_is_parameter_type(w.dtype);
      parameters += w.parameter && w.elements > 0 && !integers ? 1 : 0;
    }
    if (f.lost || f.changed || f.tensors.size() != parameters ||
        f.kept + f.folded + f.unknown != f.tensors.size()) {
      fail("a model is not the export of itself", f.outcome + " (" + std::to_string(f.tensors.size()) + " tensors)");
    }
    for (const Diff& d : {self, compare_sides(diff_side(path, *audit), diff_side("none", BaselineModel{}))}) {
      if (d.counts_changed && d.b.audit) fail("a model differs from itself", d.outcome);
      for (const auto& format : diff_formats()) {
        std::ostringstream out;
        render_diff(d, format, out);
      }
    }
  }

  // The same bytes read from memory (the Python module's way) must give the same audit; a
  // checkpoint (found by its first bytes) is read from its file only.
  if (!checkpoint_format(path).empty()) {
    std::remove(path.c_str());
    return;
  }
  AuditOptions in_memory;
  in_memory.load.base_dir = std::filesystem::path(path).parent_path().string();
  std::optional<Audit> memory;
  try {
    memory = audit_bytes(reinterpret_cast<const char*>(data), size, path, in_memory);
  } catch (const InputError&) {
  } catch (const std::bad_alloc&) {
  }
  const auto& file = run.files.at(0).audit;
  if (file.has_value() != memory.has_value()) {
    fail(std::string("the file ") + (file ? "audits" : "fails") + " but the same bytes in memory " +
             (memory ? "audit" : "fail"),
         err.str());
  }
  if (file && (file->inventory.stored != memory->inventory.stored || file->unique != memory->unique ||
               file->attention.parameters != memory->attention.parameters ||
               file->attention.blocks.size() != memory->attention.blocks.size() ||
               file->findings.size() != memory->findings.size())) {
    fail("the same bytes audit differently from a file and from memory", err.str());
  }
  std::remove(path.c_str());
}

}  // namespace fuzz
