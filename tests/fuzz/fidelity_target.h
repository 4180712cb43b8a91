// fidelity_target.h: what every input of the export-check harness goes through, shared by the
// fuzz_fidelity harness and the corpus replay test of the normal build.
//
// One input is a pair: a 4-byte little-endian length N, then N bytes of an ONNX export, then the
// checkpoint (the rest; a GGUF when it starts with "GGUF", else written as a .safetensors). Both
// are written to the harness's private folder and compared through the library calls behind the
// command line (runner.h): `diff model.onnx CHECKPOINT --fail-on-change` (run_diff, rendered in
// every diff format) and `audit model.onnx --checkpoint CHECKPOINT` (run_audit with its
// checkpoint gate, rendered in text and JSON), each through the same "clean exit" checks as
// fuzz_target.h (exit 0, 1 or 2; every stderr line "headcount: ..."; exit 2 with an error line). Then the library's own check_fidelity on the two audits, whose result must hold
// together: every checkpoint parameter has one verdict and the tallies add up, a changed tensor
// differs in 1 to all of its elements and says where, every holder is an export tensor, and a
// failed check fails `diff --fail-on-change`. Anything else, an escaping exception or a sanitizer
// report is a finding.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "headcount/audit.h"
#include "headcount/error.h"
#include "headcount/fidelity.h"
#include "headcount/render.h"
#include "headcount/run.h"
#include "headcount/runner.h"

namespace fuzz {

struct Pair {
  std::string model, checkpoint;
};

// The model and the checkpoint of one input; a length past the end takes every byte left.
inline Pair split_pair(const uint8_t* data, size_t size) {
  Pair p;
  if (size < 4) return p;
  const uint64_t n = uint64_t{data[0]} | uint64_t{data[1]} << 8 | uint64_t{data[2]} << 16 | uint64_t{data[3]} << 24;
  const size_t model = static_cast<size_t>(std::min<uint64_t>(n, size - 4));
  p.model.assign(reinterpret_cast<const char*>(data) + 4, model);
  p.checkpoint.assign(reinterpret_cast<const char*>(data) + 4 + model, size - 4 - model);
  return p;
}

// `headcount diff MODEL CHECKPOINT --fail-on-change`, in every diff format: its exit code.
inline int check_diff(const std::string& model, const std::string& ckpt) {
  headcount::DiffRequest request;
  request.a = model;
  request.b = ckpt;
  const headcount::DiffRun run = headcount::run_diff(request);
  const int code = !run.diff ? 2 : run.failed() ? 1 : 0;
  const std::string err = run.diff ? "" : "headcount: error: " + headcount::one_line(run.error) + "\n";
  check_exit("diff " + model + " " + ckpt + " --fail-on-change", code, err);
  for (const std::string& format : headcount::diff_formats()) {
    std::ostringstream out;
    if (run.diff) headcount::render_diff(*run.diff, format, out);
  }
  return code;
}

// `headcount audit MODEL --checkpoint CHECKPOINT`, in text and JSON.
inline void check_audit(const std::string& model, const std::string& ckpt) {
  headcount::AuditRequest request;
  request.inputs = {model};
  request.audit.checkpoint = ckpt;
  const headcount::Run run = headcount::run_audit(request);
  std::ostringstream err;
  headcount::report_problems(run, err);
  check_exit("audit " + model + " --checkpoint " + ckpt, headcount::exit_code(run), err.str());
  for (const headcount::Format format : {headcount::Format::Text, headcount::Format::Json}) {
    headcount::RenderOptions options;
    options.format = format;
    std::ostringstream out;
    headcount::render(run, options, out);
  }
}

// The export check's result holds together (see the top of this file).
inline void check_result(const headcount::Fidelity& f, const headcount::Audit& e, const headcount::Audit& c) {
  using headcount::Verdict;
  auto broken = [&](const std::string& what) { fail("the export check's result breaks an invariant", what + "; " + f.outcome); };
  uint64_t parameters = 0;
  for (const auto& w : c.model.weights) {
    // A checkpoint's integer tensors are stored and counted, but buffers: not compared.
    const bool integers = c.model.checkpoint && w.dtype != 0 && !headcount::dtype_is_parameter_type(w.dtype);
    parameters += w.parameter && w.elements > 0 && !integers ? 1 : 0;
  }
  if (f.tensors.size() != parameters) broken("not one entry per checkpoint parameter");
  uint64_t tally[5] = {0, 0, 0, 0, 0};
  for (const auto& t : f.tensors) {
    if (t.tensor < 0 || static_cast<size_t>(t.tensor) >= c.model.weights.size()) broken("a checkpoint index");
    const uint64_t elements = c.model.weights[static_cast<size_t>(t.tensor)].elements;
    ++tally[static_cast<int>(t.verdict)];
    for (const auto& h : t.held) {
      if (h.weight < 0 || static_cast<size_t>(h.weight) >= e.model.weights.size()) broken(t.what.name + ": a holder index");
    }
    if ((t.verdict == Verdict::Kept || t.verdict == Verdict::Folded || t.verdict == Verdict::Changed) && t.held.empty()) {
      broken(t.what.name + ": " + headcount::verdict_name(t.verdict) + " without the export tensor");
    }
    if (t.verdict == Verdict::Changed && (t.differing == 0 || t.differing > elements || t.largest_at >= elements)) {
      broken(t.what.name + ": changed in " + std::to_string(t.differing) + " of " + std::to_string(elements) +
             " elements, at " + std::to_string(t.largest_at));
    }
  }
  if (tally[0] != f.kept || tally[1] != f.folded || tally[2] != f.changed || tally[3] != f.lost || tally[4] != f.unknown) {
    broken("the tallies do not add up");
  }
}

inline void run_fidelity(const uint8_t* data, size_t size) {
  using namespace headcount;
  const Pair pair = split_pair(data, size);
  const std::filesystem::path dir = std::filesystem::path(scratch_model()).parent_path();
  const std::string model = (dir / "model.onnx").string();
  const std::string ckpt = (dir / (pair.checkpoint.rfind("GGUF", 0) == 0 ? "ckpt.gguf" : "ckpt.safetensors")).string();
  for (const auto& [path, bytes] : {std::make_pair(model, pair.model), std::make_pair(ckpt, pair.checkpoint)}) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  const int diff_code = check_diff(model, ckpt);
  check_audit(model, ckpt);
  try {
    Audit e = audit_file(model);  // as diff reads both sides (content compared)
    Audit c = audit_file(ckpt);
    if (!e.model.checkpoint && c.model.checkpoint) {  // an export and a checkpoint, as diff compares them
      Fidelity f = check_fidelity(e, model, c, ckpt);
      check_result(f, e, c);
      if (f.failed() && diff_code != 1) fail("a failed export check passes diff --fail-on-change", f.outcome);
    }
  } catch (const InputError&) {
  } catch (const std::bad_alloc&) {
  }
  std::remove(model.c_str());
  std::remove(ckpt.c_str());
}

}  // namespace fuzz
