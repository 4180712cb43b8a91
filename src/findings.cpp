// findings.cpp: the rule table and the checks behind each rule.
#include "headcount/findings.h"

#include <algorithm>

#include "headcount/report.h"

namespace headcount {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Info: return "info";
    case Severity::Warning: return "warning";
    case Severity::Error: return "error";
  }
  return "?";
}

std::optional<Severity> parse_severity(const std::string& s) {
  if (s == "info") return Severity::Info;
  if (s == "warning") return Severity::Warning;
  if (s == "error") return Severity::Error;
  return std::nullopt;
}

const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"external-data-missing", Severity::Error, "an external data file named by a tensor is not there",
       "The tensor's element count still comes from its dims, so the audit's numbers stand, but the model "
       "cannot run and its weights cannot be compared for duplicates. Ship the data file next to the model."},
      {"external-data-size-mismatch", Severity::Error,
       "an external data range does not fit the data file, or its length disagrees with the tensor's shape",
       "offset + length must lie inside the data file, and length must equal the bytes the dims and dtype "
       "need. A short file usually means a truncated download or a data file from another export."},
      {"unmatched-softmax", Severity::Warning, "a Softmax that was not matched to an attention block",
       "Every Softmax is either inside an attention block or listed with the reason it did not match. "
       "Classifier heads are expected here; a Softmax inside a transformer layer means headcount could "
       "not read that block, so the attention total is missing it."},
  };
  return table;
}

const Rule* find_rule(const std::string& id) {
  for (const auto& r : rules()) {
    if (id == r.id) return &r;
  }
  return nullptr;
}

namespace {

Finding make(const char* id, std::optional<int> block, std::string message) {
  const Rule* r = find_rule(id);
  return Finding{id, r ? r->severity : Severity::Info, block, std::move(message)};
}

void external_data(const Model& m, std::vector<Finding>& out) {
  std::vector<std::string> missing_files;
  uint64_t missing_tensors = 0, missing_elements = 0;
  for (const Weight& w : m.weights) {
    if (w.external_status == ExternalStatus::Missing) {
      ++missing_tensors;
      missing_elements += w.elements;
      if (std::find(missing_files.begin(), missing_files.end(), w.external_location) == missing_files.end()) {
        missing_files.push_back(w.external_location);
      }
    } else if (w.external_status == ExternalStatus::SizeMismatch) {
      out.push_back(make("external-data-size-mismatch", std::nullopt,
                         "tensor '" + w.name + "' needs " + with_commas(w.bytes) + " bytes at offset " +
                             with_commas(w.external_offset) + " of '" + w.external_location + "'" +
                             (w.external_length >= 0 ? " (length " + with_commas(static_cast<uint64_t>(w.external_length)) + ")" : "") +
                             ", but that file has " + with_commas(w.external_file_size) + " bytes"));
    }
  }
  for (const auto& f : missing_files) {
    out.push_back(make("external-data-missing", std::nullopt,
                       "external data file '" + f + "' is not next to the model; " + with_commas(missing_tensors) +
                           " tensors (" + with_commas(missing_elements) +
                           " parameters) were counted from their dims alone"));
  }
}

}  // namespace

std::vector<Finding> run_rules(const Model& model, const AttentionResult& attention) {
  std::vector<Finding> out;
  external_data(model, out);
  (void)attention;
  return out;
}

}  // namespace headcount
