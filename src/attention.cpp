// attention.cpp: placeholder matcher (every Softmax unmatched) until the structural matcher lands.
#include "headcount/attention.h"

namespace headcount {

const char* role_name(Role r) {
  switch (r) {
    case Role::Q: return "q";
    case Role::K: return "k";
    case Role::V: return "v";
    case Role::O: return "o";
  }
  return "?";
}

const Projection& AttentionBlock::projection(Role r) const {
  switch (r) {
    case Role::Q: return q;
    case Role::K: return k;
    case Role::V: return v;
    default: return o;
  }
}
Projection& AttentionBlock::projection(Role r) {
  return const_cast<Projection&>(static_cast<const AttentionBlock*>(this)->projection(r));
}

AttentionResult match_attention(const Model& model) {
  AttentionResult r;
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    const auto& n = *model.nodes[i].proto;
    if (n.op_type() == "Softmax") {
      r.unmatched.push_back({static_cast<int>(i), n.name(), "attention matching is not implemented yet"});
    }
  }
  return r;
}

}  // namespace headcount
