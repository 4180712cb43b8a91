// headcount/findings.h: the rules that turn a loaded and matched model into findings.
//
// Each rule is one row of kRules (id, severity, summary, documentation); the same table feeds
// `--help`, `headcount explain RULE` and validation of rule names.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "headcount/attention.h"
#include "headcount/duplicates.h"
#include "headcount/experts.h"
#include "headcount/model.h"

namespace headcount {

enum class Severity { Info, Warning, Error };
const char* severity_name(Severity s);
std::optional<Severity> parse_severity(const std::string& s);

struct Rule {
  const char* id;        // stable kebab-case id
  Severity severity;
  const char* summary;   // one line
  const char* doc;       // what it means, why it matters, what to do
};

const std::vector<Rule>& rules();
const Rule* find_rule(const std::string& id);

struct Finding {
  std::string rule;
  Severity severity = Severity::Info;
  std::optional<int> block;  // attention block index when it applies
  std::string message;
};

struct Declared;

// The finding that the analyses reading values ran out of the audit's budget (rule
// value-budget-spent), naming those that stopped; nothing when none did.
std::optional<Finding> value_budget_finding(const ValueBudget& budget);

// Runs every rule over a model, its attention blocks, its duplicate tensors and, when the model
// has a config beside it, what that config declares.
std::vector<Finding> run_rules(const Model& model, const AttentionResult& attention,
                               const std::vector<DuplicatePair>& duplicates, const Declared* declared = nullptr,
                               const ExpertResult* experts = nullptr, uint64_t framework_parameters = 0,
                               std::optional<uint64_t> active_parameters = std::nullopt);

}  // namespace headcount
