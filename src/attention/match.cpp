// match.cpp: finds attention cores (unfused Softmax patterns and fused operators), assembles
// each block's Q/K/V/O shares, infers heads, and accounts for every Softmax.
#include <algorithm>
#include <map>
#include <set>

#include "headcount/attention.h"
#include "headcount/error.h"
#include "projections.h"
#include "shapes.h"

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

namespace {

using detail::IntVector;
using detail::Part;
using detail::ProjectionHit;
using detail::ProjectionWalker;
using detail::ShapeOracle;

bool is_fused_attention(const onnx::NodeProto& n) {
  static const char* ms[] = {"Attention", "PackedAttention", "QAttention", "MultiHeadAttention",
                             "DecoderMaskedMultiHeadAttention", "GroupQueryAttention", "SparseAttention",
                             "PagedAttention", "LongformerAttention", "PackedMultiHeadAttention"};
  if (n.domain() == "com.microsoft") return std::find(std::begin(ms), std::end(ms), n.op_type()) != std::end(ms);
  return (n.domain().empty() || n.domain() == "ai.onnx") && n.op_type() == "Attention";
}

// Sums of shares: a hostile graph can route one huge tensor into many projections, so a count
// that does not fit in 64 bits refuses the model instead of wrapping.
uint64_t plus(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (add_overflows(a, b, &r)) throw InputError("an attention block's parameter count overflows 64 bits");
  return r;
}

// Widths add as checked integers; unknown (0) when a sum does not fit.
int64_t plus_width(int64_t a, int64_t b) { return (Int(a) + b).value_or(0); }

std::string node_name(const Model& m, int ni) {
  const auto& n = *m.nodes[ni].proto;
  if (!n.name().empty()) return n.name();
  return n.op_type() + (n.output_size() ? " -> " + output_of(n, 0) : std::string());
}

// One role's raw result before shares are settled; `present` is false when the role has no
// projection to look for (or its search failed and was turned into a note).
struct RoleHit {
  ProjectionHit hit;
  bool present = false;
};

class Matcher {
 public:
  explicit Matcher(const Model& m) : m_(m), shapes_(m), budget_(m), walker_(shapes_, budget_) {}

  AttentionResult run() {
    AttentionResult result;
    for (size_t g = 0; g < m_.graphs.size(); ++g) {
      for (int ni : m_.graphs[g].nodes) {
        const auto& n = *m_.nodes[ni].proto;
        if (n.op_type() == "Softmax" && (n.domain().empty() || n.domain() == "ai.onnx")) {
          std::string why;
          if (auto b = unfused(static_cast<int>(g), ni, &why)) {
            result.blocks.push_back(std::move(*b));
          } else {
            result.unmatched.push_back({ni, node_name(m_, ni), why});
          }
        } else if (is_fused_attention(n)) {
          result.blocks.push_back(fused(static_cast<int>(g), ni));
        }
      }
    }
    merge_per_head_cores(result);
    finish(result);
    return result;
  }

 private:
  const Model& m_;
  ShapeOracle shapes_;
  VisitBudget budget_;  // every walk of the matcher spends from it
  ProjectionWalker walker_;

  // ---- unfused: MatMul(Q, K^T) -> [scale] -> [mask] -> Softmax -> MatMul(., V) ----

  int find_scores_matmul(int g, const std::string& value, int depth) {
    if (depth > 12 || value.empty() || !budget_.spend()) return -1;
    int p = m_.producer_of(g, value);
    if (p < 0) return -1;
    const auto& n = *m_.nodes[p].proto;
    const std::string& op = n.op_type();
    if (op == "MatMul" || op == "FusedMatMul" || (op == "Einsum" && detail::parse_einsum(n))) {
      if (n.input_size() >= 2 && !walker_.weight_of(g, input_of(n, 0)) && !walker_.weight_of(g, input_of(n, 1))) return p;
      return -1;
    }
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Where") {
      for (int i = op == "Where" ? 1 : 0; i < n.input_size(); ++i) {
        if (m_.weight_for(g, input_of(n, i))) continue;
        int r = find_scores_matmul(g, input_of(n, i), depth + 1);
        if (r >= 0) return r;
      }
      return -1;
    }
    if (op == "Cast" || op == "Reshape" || op == "Identity" || op == "Squeeze" || op == "Unsqueeze" ||
        op == "Transpose") {
      return find_scores_matmul(g, input_of(n, 0), depth + 1);
    }
    return -1;
  }

  int find_values_matmul(int g, const std::string& value, int depth) {
    if (depth > 8) return -1;
    for (int c : m_.consumers_of(g, value)) {
      if (!budget_.spend()) return -1;
      const auto& n = *m_.nodes[c].proto;
      const std::string& op = n.op_type();
      if ((op == "MatMul" || op == "FusedMatMul") && n.input_size() >= 2 && input_of(n, 0) == value) return c;
      if (op == "Einsum" && detail::parse_einsum(n) && (input_of(n, 0) == value || input_of(n, 1) == value)) return c;
      if (op == "Cast" || op == "Dropout" || op == "Identity" || op == "Where" || op == "Reshape" || op == "Mul") {
        int r = find_values_matmul(g, output_of(n, 0), depth + 1);
        if (r >= 0) return r;
      }
    }
    return -1;
  }

  // Whether `value` is `source` or is made from it by the casts, dropouts and masks that may sit
  // between a Softmax and the MatMul with V.
  bool leads_from(int g, const std::string& value, const std::string& source, int depth) {
    if (value == source) return true;
    if (depth > 8 || value.empty() || !budget_.spend()) return false;
    int p = m_.producer_of(g, value);
    if (p < 0) return false;
    const auto& n = *m_.nodes[p].proto;
    const std::string& op = n.op_type();
    if (op != "Cast" && op != "Dropout" && op != "Identity" && op != "Where" && op != "Reshape" && op != "Mul") return false;
    for (const auto& in : n.input()) {
      if (leads_from(g, in, source, depth + 1)) return true;
    }
    return false;
  }

  std::optional<AttentionBlock> unfused(int g, int softmax, std::string* why) {
    const auto& sm = *m_.nodes[softmax].proto;
    if (budget_.exhausted()) {
      *why = "not examined: matching used up the node visits a graph of this size gets (" +
             std::to_string(VisitBudget::kPerNode) + " per node)";
      return std::nullopt;
    }
    budget_.start_walk(512);  // looking around one Softmax: hostile fan-outs stay cheap
    int qk = find_scores_matmul(g, input_of(sm, 0), 0);
    if (qk < 0) {
      *why = "no MatMul(Q, Kᵀ) of two activations before it";
      return std::nullopt;
    }
    int av = find_values_matmul(g, output_of(sm, 0), 0);
    if (av < 0) {
      *why = "its output does not feed a MatMul with V";
      return std::nullopt;
    }
    const auto& qkn = *m_.nodes[qk].proto;
    const auto& avn = *m_.nodes[av].proto;
    std::string q_value = input_of(qkn, 0), k_value = input_of(qkn, 1), v_value = input_of(avn, 1);
    if (auto eq = detail::parse_einsum(qkn)) {
      // Keras writes einsum("aecd,abcd->acbe", key, query): K is the operand that carries the
      // scores' last axis, the one Softmax normalises.
      if (!eq->out.empty() && eq->in[0].find(eq->out.back()) != std::string::npos &&
          eq->in[1].find(eq->out.back()) == std::string::npos) {
        std::swap(q_value, k_value);
      }
    }
    if (detail::parse_einsum(avn) && leads_from(g, input_of(avn, 1), output_of(sm, 0), 0)) {
      v_value = input_of(avn, 0);  // einsum(probabilities, value) or einsum(value, probabilities)
    }
    RoleHit q{walker_.back(g, q_value), true};
    RoleHit k{walker_.back(g, k_value), true};
    RoleHit v{walker_.back(g, v_value), true};
    for (auto [name, r] : {std::pair<const char*, RoleHit*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
      if (!r->hit.found()) {
        *why = std::string("looks like attention, but its ") + name + " " + r->hit.failure;
        return std::nullopt;
      }
    }
    RoleHit o{walker_.forward(g, output_of(avn, 0)), true};
    AttentionBlock b;
    b.form = "unfused";
    b.core_node = softmax;
    if (!o.hit.found()) {
      // Attention computed head by head: each core's output joins the others in a Concat, and the
      // output projection follows the Concat. The cores become one block after matching.
      int concat = concat_after(g, output_of(avn, 0));
      if (concat >= 0) {
        head_concat_[softmax] = {g, concat};
        o.present = false;
      }
    }
    assemble(g, b, q, k, v, o);
    infer_heads_unfused(b, q.hit, k.hit, v.hit);
    return b;
  }

  // core Softmax -> (graph, Concat node) for cores whose output is concatenated with other heads'.
  std::map<int, std::pair<int, int>> head_concat_;

  // The Concat an attention output reaches through shape-only ops, or -1.
  int concat_after(int g, std::string value) {
    for (int step = 0; step < 16; ++step) {
      const auto& users = m_.consumers_of(g, value);
      if (users.size() != 1) return -1;
      const auto& n = *m_.nodes[users[0]].proto;
      if (n.op_type() == "Concat") return users[0];
      if (n.op_type() != "Transpose" && n.op_type() != "Reshape" && n.op_type() != "Identity" &&
          n.op_type() != "Cast" && n.op_type() != "Squeeze" && n.op_type() != "Unsqueeze" && n.op_type() != "Dropout") {
        return -1;
      }
      value = output_of(n, 0);
    }
    return -1;
  }

  // Blocks whose cores feed one Concat are the heads of one block: their Q/K/V projections add up,
  // and the output projection is found after the Concat.
  void merge_per_head_cores(AttentionResult& r) {
    std::map<std::pair<int, int>, std::vector<size_t>> groups;  // (graph, concat) -> block positions
    for (size_t i = 0; i < r.blocks.size(); ++i) {
      auto it = head_concat_.find(r.blocks[i].core_node);
      if (it != head_concat_.end() && r.blocks[i].form == "unfused") groups[it->second].push_back(i);
    }
    std::vector<bool> drop(r.blocks.size(), false);
    for (auto& [key, members] : groups) {
      auto [g, concat] = key;
      AttentionBlock& b = r.blocks[members[0]];
      if (members.size() < 2) {
        b.notes.push_back("output projection not found: its output joins a Concat that no other attention head feeds");
        continue;
      }
      for (size_t j = 1; j < members.size(); ++j) {
        AttentionBlock& other = r.blocks[members[j]];
        for (Role role : {Role::Q, Role::K, Role::V}) {
          Projection& mine = b.projection(role);
          const Projection& theirs = other.projection(role);
          mine.weight = plus(mine.weight, theirs.weight);
          mine.bias = plus(mine.bias, theirs.bias);
          mine.out_width = plus_width(mine.out_width, theirs.out_width);
          mine.tensors.insert(mine.tensors.end(), theirs.tensors.begin(), theirs.tensors.end());
        }
        b.merged_cores.push_back(other.core_node);
        drop[members[j]] = true;
      }
      int64_t n = static_cast<int64_t>(members.size());  // b's projections now hold all n heads
      b.heads = n;
      b.kv_heads = n;
      b.head_dim = exact_div(b.q.out_width, n).opt();
      b.k_head_dim = exact_div(b.k.out_width, n).opt();
      b.v_head_dim = exact_div(b.v.out_width, n).opt();
      b.heads_from = std::to_string(n) + " attention cores, one per head, concatenated by " +
                     node_name(m_, concat) + " before the output projection";
      ProjectionHit o = walker_.forward(g, output_of(*m_.nodes[concat].proto, 0));
      if (o.found()) fill(b.o, o);
      else b.notes.push_back("output projection not found: " + o.failure);
    }
    std::vector<AttentionBlock> kept;
    for (size_t i = 0; i < r.blocks.size(); ++i) {
      if (!drop[i]) kept.push_back(std::move(r.blocks[i]));
    }
    r.blocks = std::move(kept);
  }

  // ---- fused operators ----

  AttentionBlock fused(int g, int ni) {
    const auto& n = *m_.nodes[ni].proto;
    const std::string& op = n.op_type();
    AttentionBlock b;
    b.form = op;
    b.core_node = ni;
    RoleHit q, k, v;
    bool onnx_attention = n.domain().empty() || n.domain() == "ai.onnx";
    // Head counts from the file: only positive ones are head counts.
    Int heads = detail::attr_int(n, onnx_attention ? "q_num_heads" : "num_heads");
    Int kv_heads = detail::attr_int(n, "kv_num_heads");
    if (!heads.positive()) heads = Int();
    if (!kv_heads.positive()) kv_heads = Int();
    auto input = [&](int i) -> std::string { return i < n.input_size() ? input_of(n, i) : std::string(); };

    if (!onnx_attention && (op == "Attention" || op == "PackedAttention" || op == "QAttention" ||
                            op == "LongformerAttention")) {
      // Packed weight inside the op: input 1 [in, q + k + v], bias input 2.
      auto w = walker_.weight_of(g, input(1));
      if (!w) {
        b.notes.push_back(op + " weight input '" + input(1) + "' is not a constant");
      } else {
        const Weight& tensor = m_.weights[w->weight];
        ProjectionHit packed;
        packed.node = ni;
        packed.weight = *w;
        packed.input = input(0);
        if (tensor.dims.size() == 2) {
          packed.in = tensor.dims[0];
          packed.out = tensor.dims[1];
        }
        if (auto bias = walker_.weight_of(g, input(2))) packed.bias = bias->weight;
        std::vector<Int> sizes;
        if (auto qkv = detail::attr_ints(n, "qkv_hidden_sizes"); qkv && qkv->size() == 3) sizes.assign(qkv->begin(), qkv->end());
        else if (Int third = exact_div(packed.out, 3)) sizes = {third, third, third};
        Int offset = 0;
        RoleHit* roles[] = {&q, &k, &v};
        for (size_t i = 0; i < 3 && sizes.size() == 3; ++i) {
          roles[i]->hit = packed;
          roles[i]->hit.part.offset = offset;
          roles[i]->hit.part.length = sizes[i];
          roles[i]->present = true;
          offset += sizes[i];
        }
        if (sizes.empty()) b.notes.push_back("cannot split the packed weight of " + packed.out.str("unknown") + " outputs into Q, K and V");
      }

      b.kind = "self";
    } else {
      // Projections sit upstream of the op: walk back from query, key and value.
      q = {walker_.back(g, input(0)), true};
      bool packed_query = input(1).empty() && input(2).empty();
      if (packed_query) {
        if (q.hit.found()) {
          // [h·d + 2·h_kv·d] packed: d is the width over h + 2·h_kv.
          Int h = heads, hk = kv_heads ? kv_heads : heads;
          if (Int d = exact_div(q.hit.out, h + 2 * hk); d.positive()) {
            k = q;
            v = q;
            q.hit.part = Part{0, h * d, {}, {}};
            k.hit.part = Part{h * d, hk * d, {}, {}};
            v.hit.part = Part{h * d + hk * d, hk * d, {}, {}};
          } else {
            k = q;
            v = q;
          }
        }
      } else {
        k = {walker_.back(g, input(1)), true};
        v = {walker_.back(g, input(2)), true};
      }
      for (auto [name, r] : {std::pair<const char*, RoleHit*>{"Q", &q}, {"K", &k}, {"V", &v}}) {
        if (r->present && !r->hit.found()) {
          b.notes.push_back(std::string(name) + " projection not found: it " + r->hit.failure);
          r->present = false;
        }
      }
      // MultiHeadAttention-style ops keep the packed Q/K/V bias inside the op: input 3 for
      // (Packed)MultiHeadAttention, a later input for DecoderMaskedMultiHeadAttention. It is the
      // 1-D constant whose length is the sum of the three projections' widths.
      if (op == "MultiHeadAttention" || op == "PackedMultiHeadAttention" || op == "DecoderMaskedMultiHeadAttention") {
        auto width = [](const RoleHit* r) { return r->hit.part.length ? r->hit.part.length : r->hit.out; };
        Int want = 0;
        for (RoleHit* r : {&q, &k, &v}) {
          if (r->present) want += width(r);
        }
        for (int i = 3; i < n.input_size() && want.positive(); ++i) {
          auto bias = walker_.weight_of(g, input(i));
          if (!bias || bias->rows) continue;
          const Weight& w = m_.weights[bias->weight];
          if (w.dims.size() != 1 || w.elements != want.count() || !dtype_is_parameter_type(w.dtype)) continue;
          int64_t offset = 0;  // the widths add up to `want`, so no step overflows
          for (RoleHit* r : {&q, &k, &v}) {
            if (!r->present) continue;
            r->hit.bias = bias->weight;
            r->hit.bias_range = std::make_pair(offset, offset + *width(r));
            offset += *width(r);
          }
          break;
        }
      }
    }
    RoleHit o{walker_.forward(g, output_of(n, 0)), true};
    assemble(g, b, q, k, v, o);
    if (op == "LongformerAttention") add_global_weights(g, n, b);
    if (heads) {
      b.heads = heads.opt();
      b.kv_heads = (kv_heads ? kv_heads : heads).opt();
      b.heads_from = "attribute " + std::string(onnx_attention ? "q_num_heads" : "num_heads") + " of " + op + " '" +
                     node_name(m_, ni) + "'";
      if (kv_heads) b.heads_from += ", kv_num_heads " + kv_heads.str();
      if (b.q.out_width > 0) b.head_dim = exact_div(b.q.out_width, heads).opt();
      if (b.v.out_width > 0) b.v_head_dim = exact_div(b.v.out_width, Int(b.kv_heads)).opt();
    } else if (onnx_attention && q.present && q.hit.found()) {
      // 4-D inputs [B, h, S, d]: the heads are in the Reshape that split Q upstream of the op.
      infer_heads_unfused(b, q.hit, k.hit, v.hit);
    } else if (onnx_attention) {
      b.heads_from = "unknown: ONNX Attention without q_num_heads takes heads from a 4-D input shape, which this "
                     "model does not declare";
    } else {
      b.heads_from = "unknown: " + op + " has no num_heads attribute";
    }
    return b;
  }

  // LongformerAttention has a second packed Q/K/V set for its global tokens (inputs 4 and 5):
  // parameters of the same block, split in thirds like the first set.
  void add_global_weights(int g, const onnx::NodeProto& n, AttentionBlock& b) {
    auto w = walker_.weight_of(g, input_of(n, 4));
    if (!w || w->rows || w->transposed) {
      b.notes.push_back("LongformerAttention global weight input 4 is not a constant: not counted");
      return;
    }
    const Weight& gw = m_.weights[w->weight];
    if (gw.dims.size() != 2 || gw.dims[1] % 3 != 0) {
      b.notes.push_back("LongformerAttention global weight '" + gw.name + "' is not [in, 3·hidden]: not counted");
      return;
    }
    int64_t in = gw.dims[0], third = gw.dims[1] / 3;
    auto gb = walker_.weight_of(g, input_of(n, 5));
    const Weight* bias = gb && !gb->rows && m_.weights[gb->weight].elements == static_cast<uint64_t>(3 * third)
                             ? &m_.weights[gb->weight] : nullptr;
    int i = 0;
    for (Role role : {Role::Q, Role::K, Role::V}) {
      Projection& p = b.projection(role);
      std::string cols = std::to_string(i * third) + ":" + std::to_string((i + 1) * third) + " of " + std::to_string(3 * third);
      TensorShare ws{w->weight, false, static_cast<uint64_t>(in) * static_cast<uint64_t>(third), "columns " + cols};
      p.tensors.push_back(ws);
      p.weight += ws.elements;
      if (bias) {
        TensorShare bs{static_cast<int>(bias - m_.weights.data()), true, static_cast<uint64_t>(third), "elements " + cols};
        p.tensors.push_back(bs);
        p.bias += bs.elements;
      }
      p.found = true;
      ++i;
    }
    b.notes.push_back("Q, K and V include the global-attention weights '" + gw.name + "' (inputs 4 and 5)");
  }

  // ---- shares of packed tensors, per-head sums, kind and widths ----

  struct Settled {
    int64_t in = 0, offset = 0, length = 0, full = 0;
    bool partial = false;
  };

  // The activation behind a projection input, looking through quantize/dequantize pairs and casts,
  // so that Q and K fed by one tensor count as self-attention.
  std::string source_of(int g, std::string value) {
    for (int step = 0; step < 8; ++step) {
      int p = m_.producer_of(g, value);
      if (p < 0) break;
      const auto& n = *m_.nodes[p].proto;
      const std::string& op = n.op_type();
      if (op != "DequantizeLinear" && op != "QuantizeLinear" && op != "Cast" && op != "Identity" &&
          op != "DynamicQuantizeLinear") {
        break;
      }
      value = input_of(n, 0);
    }
    return value;
  }

  void assemble(int g, AttentionBlock& b, RoleHit& q, RoleHit& k, RoleHit& v, RoleHit& o) {
    // Roles that share one packed weight split it: by the parts the walk saw, else equally in order.
    std::vector<std::pair<Role, RoleHit*>> roles = {{Role::Q, &q}, {Role::K, &k}, {Role::V, &v}};
    std::map<std::pair<int, int64_t>, std::vector<std::pair<Role, RoleHit*>>> groups;
    for (auto& [role, r] : roles) {
      if (!r->present || !r->hit.found() || !r->hit.per_head.empty()) continue;
      int64_t row_key = r->hit.weight.rows ? r->hit.weight.rows->first : -1;
      groups[{r->hit.weight.weight, row_key}].push_back({role, r});
    }
    for (auto& [key, members] : groups) {
      Int full = members[0].second->hit.out;
      bool exact = std::all_of(members.begin(), members.end(), [](auto& m) { return m.second->hit.part.offset.has_value(); });
      bool indexed = std::all_of(members.begin(), members.end(), [](auto& m) { return m.second->hit.part.index.has_value(); });
      int64_t n = static_cast<int64_t>(members.size());
      for (int64_t i = 0; i < n; ++i) {
        Part& p = members[static_cast<size_t>(i)].second->hit.part;
        if (exact) continue;
        if (n == 1 && !p.index) continue;  // the whole tensor
        Int count = p.count ? p.count : n;
        if (Int each = exact_div(full, count); indexed && each.positive()) {
          p.length = each;
          p.offset = p.index * each;
        } else if (Int part = exact_div(full, n)) {
          p.length = part;
          p.offset = i * part;
          b.notes.push_back(std::string(role_name(members[static_cast<size_t>(i)].first)) +
                            " is taken as part " + std::to_string(i + 1) + " of " + std::to_string(n) +
                            " equal parts of a packed projection: the graph does not say which part");
        }
      }
    }
    for (auto& [role, r] : roles) {
      if (r->present && r->hit.found()) fill(b.projection(role), r->hit);
    }
    if (o.hit.found()) {
      fill(b.o, o.hit);
    } else if (o.present) {  // not present: a per-head core, whose O is found after merging
      b.notes.push_back("output projection not found: " + o.hit.failure);
    }
    if (b.kind.empty()) {
      std::string qi = q.hit.input, ki = k.hit.input;
      if (!q.hit.per_head.empty()) qi = q.hit.per_head[0].input;
      if (!k.hit.per_head.empty()) ki = k.hit.per_head[0].input;
      qi = source_of(g, qi);
      ki = source_of(g, ki);
      b.kind = (q.hit.node >= 0 && q.hit.node == k.hit.node) || (!qi.empty() && qi == ki) ? "self" : "cross";
    }
    b.width = b.q.in_width;
    for (const auto& extra : k.hit.extra_weights) b.notes.push_back("K has learned tokens '" + extra + "' concatenated (add_bias_kv); they are not projection weights");
    for (const auto& extra : v.hit.extra_weights) b.notes.push_back("V has learned tokens '" + extra + "' concatenated (add_bias_kv); they are not projection weights");
  }

  // Turns one hit into a Projection with its tensor shares.
  void fill(Projection& p, const ProjectionHit& hit) {
    p.found = true;
    if (!hit.per_head.empty()) {
      for (const auto& h : hit.per_head) {
        Projection one;
        fill(one, h);
        p.weight = plus(p.weight, one.weight);
        p.bias = plus(p.bias, one.bias);
        p.in_width = one.in_width;
        p.out_width = plus_width(p.out_width, one.out_width);
        p.tensors.insert(p.tensors.end(), one.tensors.begin(), one.tensors.end());
      }
      return;
    }
    const Weight& w = m_.weights[hit.weight.weight];
    // Sizes from the weight's dims (unknown counts as 0); a part comes from Split sizes or Slice
    // bounds in the file, so it is kept inside the projection.
    int64_t in = std::max<int64_t>(hit.in.value_or(0), 0), out = std::max<int64_t>(hit.out.value_or(0), 0);
    int64_t length = hit.part.length ? std::clamp<int64_t>(*hit.part.length, 0, out) : out;
    int64_t offset = hit.part.offset ? std::clamp<int64_t>(*hit.part.offset, 0, out - length) : 0;
    p.in_width = in;
    p.out_width = length;
    TensorShare ws;
    ws.weight = hit.weight.weight;
    ws.elements = (Int(in) * length).count().value_or(0);  // at most in × out, the tensor's own elements
    bool stored_out_first = hit.weight.transposed != (m_.nodes[hit.node].proto->op_type() == "Gemm" &&
                                                      detail::attr_flag(*m_.nodes[hit.node].proto, "transB"));
    // Gemm with transB and an untransposed tensor, or MatMul behind Transpose: stored [out, in].
    const std::string axis = stored_out_first ? "rows " : "columns ";
    Int stored_full = stored_out_first ? Int(w.dims.empty() ? 0 : w.dims[0]) : Int(out);
    Int first = Int(hit.weight.rows ? hit.weight.rows->first : 0) + offset;
    if (hit.weight.rows || length != out) {
      ws.slice = axis + first.str() + ":" + (first + length).str() + " of " + stored_full.str();
    }
    if (m_.nodes[hit.node].proto->op_type() == "MatMulNBits") {
      uint64_t stored = 1;  // the blob's own dims: Weight::elements may already be the logical K x N
      for (int64_t d : w.dims) mul_overflows(stored, static_cast<uint64_t>(d), &stored);  // checked at load
      ws.slice = "logical K x N from attributes (packed " + std::to_string(stored) + " stored elements)";
    }
    p.weight = ws.elements;
    p.tensors.push_back(ws);
    if (hit.bias >= 0) {
      const Weight& bw = m_.weights[hit.bias];
      TensorShare bs;
      bs.weight = hit.bias;
      bs.bias = true;
      Int bfirst = hit.bias_range ? hit.bias_range->first : 0;
      Int blen = hit.bias_range ? Int(hit.bias_range->second - hit.bias_range->first) : Int::of_unsigned(bw.elements);
      if (blen.is(out) && length != out) {  // a packed bias is split like its weight
        bfirst = bfirst + offset;
        blen = length;
      }
      bs.elements = blen.count().value_or(0);
      if (bs.elements != bw.elements) {
        bs.slice = "elements " + bfirst.str() + ":" + (bfirst + blen).str() + " of " + std::to_string(bw.elements);
      }
      p.bias = bs.elements;
      p.tensors.push_back(bs);
    }
  }

  // Heads of an unfused block: per-head projections, else the head-splitting Reshape on Q.
  void infer_heads_unfused(AttentionBlock& b, const ProjectionHit& q, const ProjectionHit& k, const ProjectionHit& v) {
    Int q_out = b.q.out_width, k_out = b.k.out_width, v_out = b.v.out_width;
    // Keras EinsumDense kernels keep heads as an axis: [d, h, k].
    auto einsum_heads = [](const ProjectionHit& hit) { return hit.einsum_out_dims.size() >= 2 ? Int(hit.einsum_out_dims[0]) : Int(); };
    Int heads, d;
    if (Int eh = einsum_heads(q); (d = exact_div(q_out, eh)).positive()) {
      heads = eh;
      b.heads_from = "the Q projection's Einsum weight keeps " + heads.str() + " heads × " + d.str() + " as separate axes";
    } else if (!q.per_head.empty()) {
      heads = static_cast<int64_t>(q.per_head.size());
      d = q.per_head[0].part.length ? q.per_head[0].part.length : q.per_head[0].out;
      b.heads_from = std::to_string(q.per_head.size()) + " per-head Q projections concatenated";
    } else if (q.reshape && !q.reshape->empty()) {
      const IntVector& t = *q.reshape;
      std::string target = detail::format_ints(t);
      Int second_last = t.size() >= 2 ? t[t.size() - 2] : Int();
      if (t.back().positive() && (heads = exact_div(q_out, t.back())).positive()) {
        d = t.back();
        b.heads_from = "head size " + d.str() + " from " + q.reshape_node + " target " + target + " on the Q path; " +
                       q_out.str() + " / " + d.str() + " = " + heads.str() + " heads";
      } else if (second_last.positive() && (d = exact_div(q_out, second_last)).positive()) {
        heads = second_last;
        b.heads_from = "heads " + heads.str() + " from " + q.reshape_node + " target " + target + " on the Q path";
      } else {
        heads = d = Int();
        b.heads_from = "unknown: " + q.reshape_node + " target " + target + " on the Q path has no constant head size";
      }
    } else if (!q.reshape_node.empty()) {
      b.heads_from = "unknown: the target of " + q.reshape_node + " on the Q path is computed at run time";
    } else {
      b.heads_from = "unknown: no Reshape splits Q into heads between its projection and the attention core";
    }
    b.heads = heads.opt();
    if (!d.positive()) return;
    b.head_dim = d.opt();
    auto last = [](const std::optional<IntVector>& t) { return t && !t->empty() ? t->back() : Int(); };
    if (Int kd = exact_div(k_out, einsum_heads(k)); kd.positive()) {
      b.k_head_dim = kd.opt();
    } else if (!k.per_head.empty()) {
      b.k_head_dim = k.per_head[0].out.opt();
    } else if (Int kd = last(k.core_reshape); kd.positive()) {
      // Compare like with like: the head sizes Q and K have where they meet in MatMul(Q, Kᵀ).
      b.k_head_dim = (same(last(q.core_reshape), kd) ? d : kd).opt();
    }
    if (!k.per_head.empty()) b.kv_heads = static_cast<int64_t>(k.per_head.size());
    else if (einsum_heads(k).positive()) b.kv_heads = einsum_heads(k).opt();
    else if (k_out.positive()) b.kv_heads = exact_div(k_out, d).opt();
    if (Int vd = exact_div(v_out, einsum_heads(v)); vd.positive()) {
      b.v_head_dim = vd.opt();
    } else if (!v.per_head.empty()) {
      b.v_head_dim = v.per_head[0].out.opt();
    } else if (Int vd = last(v.reshape); vd.positive()) {
      b.v_head_dim = vd.opt();
    } else if (Int kv = b.kv_heads; kv.positive()) {
      b.v_head_dim = exact_div(v_out, kv).opt();
    }
  }

  // ---- names, totals and the attention parameter count ----

  static std::string common_prefix(const std::vector<std::string>& names) {
    if (names.empty()) return "";
    std::string p = names[0];
    for (const auto& n : names) {
      size_t i = 0;
      while (i < p.size() && i < n.size() && p[i] == n[i]) ++i;
      p.resize(i);
    }
    // Cut back to a separator unless the prefix is a whole name.
    bool whole = std::all_of(names.begin(), names.end(), [&](const std::string& n) { return n == p; });
    if (!whole) {
      size_t cut = p.find_last_of("./");
      p = cut == std::string::npos ? "" : p.substr(0, cut);
    }
    while (!p.empty() && (p.back() == '.' || p.back() == '/' || p.back() == '_')) p.pop_back();
    return p;
  }

  // A readable name: the common prefix of the tensor names only this block uses (exporters keep
  // module names on biases even when weights become onnx::MatMul_123), else the core's node path.
  std::string block_name(const AttentionBlock& b, const std::map<int, int>& blocks_using) {
    std::vector<std::string> names;
    std::set<Role> roles;
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) {
        const std::string& n = m_.weights[t.weight].name;
        if (n.rfind("onnx::", 0) != 0 && blocks_using.at(t.weight) == 1) {
          names.push_back(n);
          roles.insert(r);
        }
      }
    }
    std::string prefix = common_prefix(names);
    if (roles.size() == 1) {  // names of one projection only: drop that projection's own module name
      size_t cut = prefix.find_last_of("./");
      prefix = cut == std::string::npos ? "" : prefix.substr(0, cut);
    }
    if (prefix.size() >= 2) return prefix;
    const std::string& core = m_.nodes[b.core_node].proto->name();
    size_t cut = core.find_last_of('/');
    if (cut != std::string::npos && cut > 0) return core.substr(0, cut);
    return node_name(m_, b.core_node);
  }

  void finish(AttentionResult& r) {
    std::map<int, uint64_t> per_weight;  // weight -> elements claimed by the busiest block
    std::map<int, int> blocks_using;     // weight -> number of blocks that use it
    for (const auto& b : r.blocks) {
      std::set<int> mine;
      for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
        for (const auto& t : b.projection(role).tensors) mine.insert(t.weight);
      }
      for (int wi : mine) ++blocks_using[wi];
    }
    for (size_t i = 0; i < r.blocks.size(); ++i) {
      AttentionBlock& b = r.blocks[i];
      b.index = static_cast<int>(i);
      b.name = block_name(b, blocks_using);
      b.total = 0;
      for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
        const Projection& p = b.projection(role);
        b.total = plus(b.total, plus(p.weight, p.bias));
      }
      b.has_bias = b.q.bias || b.k.bias || b.v.bias || b.o.bias;
      uint64_t w = static_cast<uint64_t>(std::max<int64_t>(b.width, 0)), w2 = 0, std4 = 0;
      if (mul_overflows(w, w, &w2) || mul_overflows(w2, 4, &std4) || add_overflows(std4, b.has_bias ? 4 * w : 0, &b.standard)) {
        b.standard = 0;  // only a hostile width gets here: no standard to compare with
      }
      std::map<int, uint64_t> mine;
      std::set<std::pair<int, std::string>> seen;  // one share read by several projections counts once
      for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
        for (const auto& t : b.projection(role).tensors) {
          if (seen.insert({t.weight, t.slice}).second) mine[t.weight] = plus(mine[t.weight], t.elements);
        }
      }
      for (auto& [wi, n] : mine) per_weight[wi] = std::max(per_weight[wi], n);
    }
    for (auto& [wi, n] : per_weight) {
      // A tensor gives the attention total at most its own elements, and only when it is a
      // parameter: a hostile graph can route one tensor into overlapping shares.
      const Weight& w = m_.weights[wi];
      if (w.parameter) r.parameters += std::min(n, w.elements);
    }
  }
};

}  // namespace

AttentionResult match_attention(const Model& model) { return Matcher(model).run(); }

}  // namespace headcount
