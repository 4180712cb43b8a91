// headcount/results/findings.h: findings and the table of the rules that make them. Written by
// run_rules (src/findings.cpp); read by the gates and the renderers.
#pragma once

#include <optional>
#include <string>
#include <vector>

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

}  // namespace headcount
