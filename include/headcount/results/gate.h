// headcount/results/gate.h: the gates a model failed, and the table of every gate. Written by
// check_gates (src/gate.cpp); read by the renderers.
#pragma once

#include <string>
#include <vector>

namespace headcount {

struct GateFailure {
  std::string gate;     // "max-params", "expect-heads", "fail-on", "baseline" ...
  std::string message;  // what failed and by how much
};

// Every gate, as reports describe it (SARIF rules, docs): its id is GateFailure::gate.
struct GateKind {
  const char* id;       // "max-params"
  const char* summary;  // one line
  const char* doc;      // what it compares and how to set it
};
const std::vector<GateKind>& gate_kinds();

}  // namespace headcount
