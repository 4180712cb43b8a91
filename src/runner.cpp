// runner.cpp: the runs behind `headcount audit` and `headcount diff` once their options are read:
// many models audited on a pool of threads with their gates, and two models compared. The command
// line, the Python module and the fuzz harnesses all go through these.
#include "headcount/runner.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "headcount/baseline.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "headcount/fidelity.h"

namespace headcount {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitGate = 1;
constexpr int kExitInput = 2;

bool has_onnx_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".onnx";
}

// Files as given; directories searched recursively for .onnx files (any case), in sorted order.
// A directory without any stays in the list, so the loader reports it as the error it is.
std::vector<std::string> expand_inputs(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    std::error_code ec;
    if (std::filesystem::is_directory(a, ec)) {
      std::vector<std::string> found;
      auto it = std::filesystem::recursive_directory_iterator(
          a, std::filesystem::directory_options::skip_permission_denied, ec);
      for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && has_onnx_extension(it->path())) found.push_back(it->path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) found.push_back(a);
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(a);
    }
  }
  return files;
}

// What stopped the reading of one file, as its error line says it. A bug, not the file's fault,
// is still one line (and exit 2).
std::string failure_message(std::exception_ptr stopped) {
  try {
    std::rethrow_exception(stopped);
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::bad_alloc&) {
    return "out of memory while reading the model";
  } catch (const std::exception& e) {
    return std::string("internal error while auditing (please report it): ") + e.what();
  }
}

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += '?';  // a C1 control in UTF-8 (U+0080 to U+009F): a terminal may act on it
      ++i;
    } else {
      out += c < 0x20 || c == 0x7F ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

Run run_audit(const AuditRequest& request) {
  Run run;
  run.config = request.config;
  const GateOptions& gates = request.gates;
  run.gates_configured =
      !request.budgets.empty() || !gates.budget.limits.empty() || gates.fail_on || gates.baseline ||
      !request.audit.checkpoint.empty() || !request.audit.base.empty();
  std::vector<std::string> files = expand_inputs(request.inputs);
  run.files.resize(files.size());
  std::atomic<size_t> next{0};
  size_t done = 0;  // under progress_lock: the counter only moves forward
  bool progress = request.progress && files.size() > 1;
  std::mutex progress_lock;
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      FileResult& r = run.files[i];
      r.path = files[i];
      try {
        r.audit = audit_file(files[i], request.audit, &r.times);
        GateOptions o = gates;
        o.budget = budget_for(files[i], gates.budget, request.budgets, gates.pinned);
        r.gates = check_gates(*r.audit, o);
      } catch (const std::exception&) {
        r.audit.reset();
        r.error = failure_message(std::current_exception());
      }
      std::lock_guard<std::mutex> lock(progress_lock);
      ++done;
      if (progress) *request.progress << "\rheadcount: audited " << done << "/" << files.size() << "\033[K" << std::flush;
    }
  };
  std::vector<std::thread> pool;
  int threads = std::min<int>(request.jobs, static_cast<int>(std::max<size_t>(files.size(), 1)));
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (progress) *request.progress << "\r\033[K" << std::flush;
  return run;
}

void report_problems(const Run& run, std::ostream& err) {
  for (const auto& r : run.files) {
    if (!r.audit) {
      // FILE: what is wrong. An error that names the file itself (a URL's fetch error) is not
      // prefixed with it a second time.
      const bool named = r.error.compare(0, r.path.size() + 2, r.path + ": ") == 0;
      err << "headcount: error: " << one_line(named ? r.error : r.path + ": " + r.error) << "\n";
    }
  }
  for (const auto& r : run.files) {
    for (const auto& g : r.gates) {
      err << "headcount: gate failed: " << one_line(r.path + ": " + g.gate + ": " + g.message) << "\n";
    }
  }
}

int exit_code(const Run& run) {
  int code = kExitOk;
  for (const auto& r : run.files) {
    if (!r.audit) return kExitInput;
    if (!r.gates.empty()) code = kExitGate;
  }
  return code;
}

DiffRun run_diff(const DiffRequest& d) {
  AuditOptions options;
  options.compare_content = d.compare_content;
  DiffRun run;
  std::unique_ptr<Audit> a, b;
  std::optional<BaselineModel> baseline;
  // Reads one side; what stops it is that file's one error, as in an audit.
  auto read = [&](const std::string& file, const std::function<void()>& how) {
    try {
      how();
      return true;
    } catch (const std::exception&) {
      run.error = file + ": " + failure_message(std::current_exception());
      return false;
    }
  };
  if (!read(d.a, [&] { a = std::make_unique<Audit>(audit_file(d.a, options)); })) return run;
  std::string ext = std::filesystem::path(d.b).extension().string();
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  bool b_read = read(d.b, [&] {
    if ((ext != ".json" && ext != ".jsonl") || !checkpoint_format(d.b).empty()) {  // a sharded index is .json
      b = std::make_unique<Audit>(audit_file(d.b, options));
      return;
    }
    Baseline report = read_baseline(d.b);
    if (report.models.size() != 1) {
      throw InputError("a baseline for diff holds one model; this one holds " + std::to_string(report.models.size()));
    }
    baseline = report.models[0];
  });
  if (!b_read) return run;
  Diff diff = compare_sides(diff_side(d.a, *a), b ? diff_side(d.b, *b) : diff_side(d.b, *baseline));
  // An export and its checkpoint, in either order: is every checkpoint weight in the export?
  if (b && (a->model.checkpoint != nullptr) != (b->model.checkpoint != nullptr)) {
    if (!d.compare_content) {
      run.error = "--no-content: comparing an export with its checkpoint reads their weights";
      return run;
    }
    if (a->remote || b->remote) {  // its values are not fetched: nothing could be called kept or changed
      run.error = (a->remote ? d.a : d.b) + ": comparing an export with its checkpoint reads their weights, which a "
                  "remote model's are not: download it";
      return run;
    }
    const bool b_is_checkpoint = b->model.checkpoint != nullptr;
    diff.fidelity = b_is_checkpoint ? check_fidelity(*a, d.a, *b, d.b) : check_fidelity(*b, d.b, *a, d.a);
  }
  run.diff = std::move(diff);
  run.a = std::move(a);
  run.b = std::move(b);
  return run;
}

}  // namespace headcount
