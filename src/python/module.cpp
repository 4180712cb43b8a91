// module.cpp: headcount._headcount, the Python binding (pybind11) over the library the CLI uses.
// The Python package (python/headcount/__init__.py) wraps it in the public API. Every audit runs
// with the GIL released; a model that cannot be read raises headcount.InputError (a ValueError)
// with the CLI's "FILE: what is wrong" message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <sstream>

#include "headcount/error.h"
#include "headcount/explain.h"
#include "headcount/gate.h"
#include "headcount/render.h"
#include "headcount/run.h"
#include "headcount/runner.h"

namespace py = pybind11;

namespace headcount {
namespace {

// One audited model, kept whole so that gates and derivations can be asked of it later.
struct PyAudit {
  FileResult result;

  // The run's JSON document for this one model (its models[0] is the model's object).
  std::string json() { return rendered(Format::Json); }
  std::string html() { return rendered(Format::Html); }

  std::string rendered(Format format) {
    Run run;
    run.files.push_back(std::move(result));  // rendered in place, then given back
    std::ostringstream out;
    try {
      render(run, RenderOptions{format, 10}, out);
    } catch (...) {
      result = std::move(run.files[0]);
      throw;
    }
    result = std::move(run.files[0]);
    return out.str();
  }

  // `budgets`: Report.check's budget keywords (max_params=...), one per budget gate, by the gate's
  // id with '_' for '-'; a number or the command line's text ("110M", "2GiB").
  std::vector<std::pair<std::string, std::string>> check(const py::dict& budgets, std::optional<std::string> fail_on) const {
    GateOptions o;
    for (const auto& [key, value] : budgets) {
      std::string keyword = py::cast<std::string>(key), id = keyword;
      std::replace(id.begin(), id.end(), '_', '-');
      const BudgetGate* g = keyword.find('-') == std::string::npos ? find_budget_gate(id) : nullptr;
      if (!g) throw py::type_error("check() got an unexpected keyword argument '" + keyword + "'");
      if (value.is_none()) continue;
      if (g->unit == BudgetUnit::Heads) {
        if (!py::isinstance<py::int_>(value)) throw py::type_error(keyword + " must be a whole number");
        int64_t n = py::cast<int64_t>(value);
        if (n < 1) throw InputError(keyword + " must be 1 or more");
        o.budget.limits[g->id] = static_cast<uint64_t>(n);
      } else {
        o.budget.limits[g->id] = parse_limit(*g, py::str(value));
      }
    }
    if (fail_on) {
      auto s = parse_severity(*fail_on);
      if (!s) throw InputError("fail_on must be 'error', 'warning' or 'info', not '" + *fail_on + "'");
      o.fail_on = *s;
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& f : check_gates(*result.audit, o)) out.emplace_back(f.gate, f.message);
    return out;
  }

  std::string explain_block(int index) const { return headcount::explain_block(*result.audit, index); }
};

AuditOptions options_for(bool content, const std::optional<std::string>& model_config,
                         const std::optional<std::string>& base_dir, bool beside) {
  AuditOptions o;
  o.compare_content = content;
  if (model_config) o.model_config = *model_config;
  o.find_model_config = beside && !model_config;
  if (base_dir) o.load.base_dir = *base_dir;
  return o;
}

// One model audited by `read`, shown as `shown`; an unreadable model throws
// InputError("SHOWN: what is wrong").
PyAudit audited(const std::string& shown, const std::function<Audit(StageTimes*)>& read) {
  PyAudit a;
  a.result.path = shown;
  try {
    a.result.audit = read(&a.result.times);
  } catch (const InputError& e) {
    throw InputError(shown + ": " + e.what());
  } catch (const std::bad_alloc&) {
    throw InputError(shown + ": out of memory while reading the model");
  }
  return a;
}

PyAudit audit_path(const std::string& path, bool content, std::optional<std::string> model_config,
                   std::optional<std::string> base_dir, std::optional<std::string> checkpoint,
                   std::optional<std::string> base) {
  AuditOptions o = options_for(content, model_config, base_dir, true);
  if (base) o.base = *base;
  if (checkpoint) {
    if (!content) throw InputError("checkpoint= compares weight values, which content=False does not read");
    o.checkpoint = *checkpoint;
  }
  py::gil_scoped_release release;
  return audited(path, [&](StageTimes* times) { return audit_file(path, o, times); });
}

// A model handed over in memory is read where it is: the bytes object is immutable and the caller
// holds it for the whole call. External data is resolved against base_dir.
PyAudit audit_in_memory(const py::bytes& data, const std::string& name, bool content, std::optional<std::string> model_config,
                        std::optional<std::string> base_dir) {
  char* bytes = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &bytes, &size) != 0) throw py::error_already_set();
  AuditOptions o = options_for(content, model_config, base_dir, false);
  std::error_code ec;
  o.load.base_dir = base_dir ? *base_dir : std::filesystem::current_path(ec).string();
  if (o.load.base_dir.empty()) o.load.base_dir = "/";
  py::gil_scoped_release release;
  return audited(name, [&](StageTimes* times) { return audit_bytes(bytes, static_cast<uint64_t>(size), name, o, times); });
}

// Many files on `jobs` threads: each result, or the error that stopped it.
py::list audit_many(const std::vector<std::string>& paths, int jobs, bool content) {
  if (jobs < 1 || jobs > 256) throw InputError("jobs must be between 1 and 256");
  AuditRequest request;
  request.inputs = paths;
  request.audit = options_for(content, std::nullopt, std::nullopt, true);
  request.jobs = jobs;
  Run run;
  {
    py::gil_scoped_release release;
    run = run_audit(request);
  }
  py::list out;
  for (auto& f : run.files) {
    if (f.audit) {
      PyAudit a;
      a.result = std::move(f);
      out.append(py::make_tuple(py::cast(std::move(a)), py::none()));
    } else {
      out.append(py::make_tuple(py::none(), f.path + ": " + f.error));
    }
  }
  return out;
}

py::dict calculate_block(int64_t width, int64_t heads, std::optional<int64_t> head_dim, std::optional<int64_t> key_channels,
                         std::optional<int64_t> v_head_dim, std::optional<int64_t> kv_heads, bool bias,
                         const std::string& convention) {
  const ConventionInfo* conv = find_convention(convention);
  if (!conv) {
    std::string names;
    for (const auto& c : conventions()) names += (names.empty() ? "" : ", ") + std::string(c.name);
    throw InputError("convention '" + convention + "' is not one of " + names);
  }
  BlockSpec spec;
  spec.width = width;
  spec.heads = heads;
  spec.head_dim = head_dim;
  spec.key_channels = key_channels;
  spec.v_head_dim = v_head_dim;
  spec.kv_heads = kv_heads;
  spec.bias = bias;
  Calculation c = calculate(spec);
  py::dict d;
  d["width"] = c.width;
  d["heads"] = c.heads;
  d["head_dim"] = c.head_dim;
  d["v_head_dim"] = c.v_head_dim;
  d["kv_heads"] = c.kv_heads;
  d["bias"] = c.bias;
  py::list projections;
  for (const auto& p : c.projections) {
    py::dict pd;
    pd["role"] = p.role;
    pd["in"] = p.in;
    pd["out"] = p.out;
    pd["weight"] = p.weight;
    pd["bias"] = p.bias;
    pd["formula"] = p.formula;
    projections.append(pd);
  }
  d["projections"] = projections;
  d["total"] = c.total;
  d["standard"] = c.standard;
  d["convention"] = conv->name;
  d["explanation"] = explain_calculation(spec, conv->id);  // how heads move the count under that convention
  return d;
}

}  // namespace
}  // namespace headcount

PYBIND11_MODULE(_headcount, m) {
  using namespace headcount;
  m.doc() = "headcount's C++ library, as the headcount package uses it (import headcount, not this module)";
  m.attr("__version__") = kVersion;
  py::register_exception<InputError>(m, "InputError", PyExc_ValueError);
  py::class_<PyAudit>(m, "Audit")
      .def("json", &PyAudit::json, "the JSON report of this model, as `headcount audit -f json` writes it")
      .def("html", &PyAudit::html, "the HTML report of this model, as `headcount audit -f html` writes it")
      .def("check", &PyAudit::check, py::arg("budgets"), py::arg("fail_on"),
           "the gates that fail, as (gate, message) pairs")
      .def("explain_block", &PyAudit::explain_block, py::arg("index"), "how one block's count is derived");
  m.def(
      "budget_keywords",
      [] {
        std::vector<std::string> names;
        for (const auto& g : budget_gates()) {
          std::string name = g.id;
          std::replace(name.begin(), name.end(), '-', '_');
          names.push_back(name);
        }
        return names;
      },
      "Report.check's budget keywords, one per budget gate, in the table's order");
  m.def("audit_path", &audit_path, py::arg("path"), py::arg("content"), py::arg("model_config"), py::arg("base_dir"),
        py::arg("checkpoint") = std::nullopt, py::arg("base") = std::nullopt);
  m.def("audit_bytes", &audit_in_memory, py::arg("data"), py::arg("name"), py::arg("content"), py::arg("model_config"),
        py::arg("base_dir"));
  m.def("audit_many", &audit_many, py::arg("paths"), py::arg("jobs"), py::arg("content"));
  m.def("calculate", &calculate_block, py::arg("width"), py::arg("heads"), py::arg("head_dim"), py::arg("key_channels"),
        py::arg("v_head_dim"), py::arg("kv_heads"), py::arg("bias"), py::arg("convention"));
  m.def("explain_config_json", [](const std::string& path) { return explain_config_json(path); }, py::arg("path"));
}
