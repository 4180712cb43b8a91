// headcount/findings.h: the rules that turn a loaded and matched model into findings.
//
// Each rule is one row of kRules (id, severity, summary, documentation); the same table feeds
// `--help`, `headcount explain RULE` and validation of rule names.
#pragma once

#include <optional>
#include <vector>

#include "headcount/results/findings.h"
#include "headcount/results/attention.h"
#include "headcount/results/duplicates.h"
#include "headcount/results/experts.h"
#include "headcount/model.h"

namespace headcount {

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
