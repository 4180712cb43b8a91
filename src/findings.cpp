// findings.cpp: the rule table and the checks behind each rule.
#include "headcount/findings.h"

#include "headcount/checkpoint_index.h"
#include "headcount/dtypes.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "headcount/declared.h"
#include "headcount/numbers.h"

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
      {"width-mismatch", Severity::Warning, "heads x head_dim differs from the model width, for Q/K or for V/O",
       "The standard block projects the width d to h heads of d/h features, so its count is 4d^2 (+4d) whatever "
       "h is. When h x d_k (or h x d_v) is not d, the count depends on the per-head size. That is legal (a "
       "bottleneck) but it is also the signature of two common mix-ups. Keras MultiHeadAttention's key_dim is "
       "PER HEAD: setting it to the model width multiplies the projections by the number of heads, so the count "
       "grows with heads (keras#18373). MATLAB selfAttentionLayer's NumKeyChannels is the TOTAL over heads: a "
       "per-head number typed there shrinks the block, and the count falls as heads grow (4 heads x 784 on a "
       "3136 input: 9.8M; 8 x 392: 4.9M). The message gives the numbers and what the author probably meant."},
      {"decoupled-head-size", Severity::Info, "heads x head_dim differs from the width, as the model's config declares",
       "Some models choose a head size apart from width / heads: Gemma's head_dim is 256 over widths of 1152 to "
       "3840, Qwen3's 128 at every size (the 0.6B model: 16 heads x 128 = 2,048 over a width of 1,024). Their "
       "config.json states head_dim. When the config beside the model (or --model-config) states head_dim and "
       "the graph's head size agrees, heads x head_dim != width is the design, not a mix-up: this finding says "
       "so in place of width-mismatch, with what it does to the count (Q/K/V/O project width -> heads x "
       "head_dim, so the block is not 4 x width^2)."},
      {"heads-not-divisor", Severity::Error, "the model width is not divisible by the number of heads",
       "No per-head split of the width exists, so the heads cannot each see width/heads features. PyTorch's "
       "nn.MultiheadAttention refuses such a configuration; an exported model that has one was built with a "
       "per-head size that does not multiply back to the width."},
      {"qk-dim-mismatch", Severity::Error, "Q and K have different per-head sizes",
       "MatMul(Q, K^T) needs Q and K heads of the same size. When the graph states different sizes, either the "
       "export is broken or headcount misread a reshape; the block's head numbers cannot be trusted."},
      {"bias-inconsistent", Severity::Info, "some projections have a bias and others do not",
       "The textbook count is 4d^2 + 4d with biases on all four projections or 4d^2 with none. Mixed biases "
       "are sometimes deliberate: Whisper's K projection is bias-free. The finding says which projections "
       "have one, so the count can be reconciled."},
      {"grouped-kv", Severity::Info, "grouped-query or multi-query attention: fewer K/V heads than query heads",
       "With h_kv < h key/value heads, K and V project to h_kv x d_k features instead of h x d_k, so the block "
       "is smaller than the standard 4d^2. This is GQA (MQA when h_kv = 1), not a mismatch."},
      {"per-head-projections", Severity::Info, "Q, K or V are h separate per-head projections",
       "h projections of d -> d_k hold exactly the parameters of one d -> h x d_k projection: splitting them "
       "changes speed, not the count. The paper draws them per head; implementations pack them."},
      {"latent-attention", Severity::Info, "multi-head latent attention: Q and K/V through low-rank latents",
       "DeepSeek-V2/V3-style attention (MLA) projects the input down to a small latent, normalizes it and "
       "projects it up to every head's K and V; Q may go through a latent of its own, and a small RoPE key "
       "shared by all heads is split off the K/V down projection. Its count is d x q_rank + q_rank x h(d_nope "
       "+ d_rope) for Q, d x (kv_rank + d_rope) + kv_rank x h(d_nope + d_v) for K/V, h d_v x d for O, plus the "
       "two norms. Heads x head size is not the width by design, so width-mismatch does not apply; a decoder "
       "caches the kv_rank + d_rope latent per token instead of full K and V."},
      {"mixture-of-experts", Severity::Info, "experts, top-k and the parameters each token runs",
       "A mixture-of-experts layer holds many feed-forward experts and a router that sends each token to k of "
       "them, so the parameters that run per token (the active count) are the total less (experts - k) x one "
       "expert in every such layer. \"8x7B\" is not 56B: only the feed-forward is repeated per expert, while "
       "attention, embeddings, norms and routers are there once (Mixtral-8x7B: 46.7B in all, 12.9B per token). "
       "headcount reads onnxruntime's fused MoE and QMoE and routing written out (a TopK over a router "
       "projection, experts as MLPs weighted by the routing). Shared experts run for every token."},
      {"count-exceeds-tensors", Severity::Warning, "a block's shares of a tensor added up to more than the tensor holds",
       "A packed Q/K/V tensor is split by rows and the heads, a latent attention's kv_b into each head's K and V. "
       "Per-head arithmetic on a hostile or empty shape (a [3 x 2^61, 0] qkv_proj stores nothing) can give "
       "shares that add up to more than the tensor stores. No block or projection may hold more parameters than "
       "the tensors it claims: such a split is refused, the tensor is counted whole once under the first "
       "projection that claimed it, and this finding names it. The per-projection split of that block is then "
       "unknown."},
      {"shared-weights", Severity::Info, "one tensor is used by several blocks or roles and counted once",
       "Exporters merge equal tensors (zero biases, unit norms, repeated layers of an untrained model) into "
       "one initializer used many times. headcount counts a tensor once however often it is used; per-block "
       "totals each show it, the model totals count it once."},
      {"duplicate-weights", Severity::Warning, "two tensors hold identical content, or one is the transpose of the other",
       "A tied embedding and LM head is one parameter in the framework but is exported as the embedding "
       "[V, d] plus a constant-folded transposed copy [d, V]. headcount compares the content of candidate "
       "pairs (same dtype and element count, same or transposed shape; tensors of one repeated value are left "
       "out) and reports parameters.unique = stored minus the copies: the number the framework reports."},
      {"unmatched-softmax", Severity::Warning, "a Softmax that looks like attention but was not matched",
       "Every Softmax is either inside an attention block or listed in `unmatched` with the reason. A Softmax "
       "between MatMul(Q, K^T) and MatMul(., V) whose projections headcount could not read means the attention "
       "total is missing that block. Classifier heads and other Softmaxes are listed but not flagged."},
      {"external-data-missing", Severity::Error, "an external data file named by a tensor is not there",
       "Element counts still come from dims, so the numbers stand, but the model cannot run and its weights "
       "cannot be compared for duplicates. Ship the data file next to the model."},
      {"external-data-size-mismatch", Severity::Error,
       "an external data range does not fit the data file, or its length disagrees with the tensor's shape",
       "offset + length must lie inside the data file, and length must equal the bytes the dims and dtype "
       "need. A short file usually means a truncated download or a data file from another export."},
      {"external-data-outside-model-dir", Severity::Error, "an external data location leaves the model's folder",
       "A location that is absolute, contains '..', or resolves through a symlink outside the model's folder "
       "is how CVE-2022-25882, CVE-2024-27318 and CVE-2025-51480 read arbitrary files. headcount refuses the "
       "model without opening or stat'ing the target: the audit stops with "
       "`headcount: error: FILE: ... refused` and exit code 2."},
      {"checkpoint-total-size", Severity::Error,
       "a sharded checkpoint's index states a total size its shards do not hold",
       "model.safetensors.index.json states metadata.total_size, the bytes of every tensor in its shards. "
       "When the shards' tensors add up to another size, the index was written for other shards: a shard from "
       "another revision, or a partial download. headcount counts what the shards hold."},
      {"gguf-partial-blocks", Severity::Error,
       "a GGUF tensor's rows are not whole blocks of its quantized type: llama.cpp refuses the file",
       "ggml stores a block-quantized type (Q8_0: 32 elements in 34 bytes) row by row, each row whole "
       "blocks, and llama.cpp's loader refuses a tensor whose first dimension is not a multiple of the "
       "block. Some converters pack the blocks across the whole tensor instead (a Q8_0 ffn_down of rows of "
       "172 elements: 11,008 elements in 344 blocks, 11,696 bytes). headcount counts such a tensor, its "
       "parameters from the dims and its bytes from the packed total, and names it: requantize it, or store "
       "it in F16 or F32, for llama.cpp to load the file."},
      {"config-mismatch", Severity::Error, "the model's config declares an architecture its graph does not have",
       "A config.json (Hugging Face, as Optimum writes it beside an export), a genai_config.json "
       "(onnxruntime-genai) or --model-config FILE declares layers, width, heads, K/V heads, head size, "
       "feed-forward size, vocabulary and tied embeddings. headcount compares each with the graph and reports "
       "agrees, differs or not checkable. A difference means the model was exported with another "
       "configuration than the one that travels with it, or the config is stale: code that reads the config "
       "(generation loops, KV-cache allocation, serving) will then disagree with the weights."},
      {"value-budget-spent", Severity::Warning, "the analyses that read values used up the audit's budget and stopped early",
       "The analyses that read values or search the graph around a candidate (the mask evaluator, buffers, "
       "folded constants, routers, mixers) share one allowance per audit, in proportion to the file: a floor "
       "of 2^24 units, 256 per node and 4 per stored byte (an evaluator step or a graph visit costs 8, an "
       "element read 1). A file built to make them slow spends it; each analysis that runs out stops where it "
       "is and leaves unproven what it did not finish: a window it did not read is not reported, a tensor "
       "not proven a buffer or a folded constant counts as a parameter, a TopK not examined is counted as "
       "such, a mixer whose roles were not worked out is not reported. The finding names the analyses that "
       "stopped. No ordinary model comes near the budget: a model that does is built to."},
      {"quantized-weights", Severity::Info, "how quantized and packed sub-byte weights were counted",
       "One parameter per logical weight element: int8 QDQ weights count their elements (scales and zero "
       "points are stored too and counted as such); 4-bit types hold two parameters per byte; MatMulNBits "
       "weights count the logical K x N from the operator's attributes, not the bytes of the packed blob."},
  };
  return table;
}

std::optional<Finding> value_budget_finding(const ValueBudget& budget) {
  const auto& stopped = budget.stopped();
  if (stopped.empty()) return std::nullopt;
  std::string names;
  for (size_t i = 0; i < stopped.size(); ++i) names += (i ? i + 1 == stopped.size() ? " and " : ", " : "") + stopped[i];
  const Rule* r = find_rule("value-budget-spent");
  return Finding{"value-budget-spent", r->severity, std::nullopt,
                 "the analyses that read values used up this audit's budget of " + with_commas(budget.total()) +
                     " units and stopped early: " + names + ". What they did not finish is left unproven: a window " +
                     "not read is not reported, a tensor not proven a buffer counts as a parameter, a TopK not "
                     "examined is counted as such"};
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

std::string n(uint64_t v) { return with_commas(v); }
std::string n(int64_t v) { return with_commas_signed(v); }

std::string join_roles(const std::vector<std::string>& roles) {
  std::string s;
  for (size_t i = 0; i < roles.size(); ++i) {
    if (i) s += i + 1 == roles.size() ? " and " : ", ";
    s += roles[i];
  }
  return s;
}

std::string standard_formula(int64_t w, bool bias) {
  return "4·" + std::to_string(w) + "²" + (bias ? " + 4·" + std::to_string(w) : std::string());
}

std::string n(Int v) { return v ? n(*v) : std::string("unknown"); }

void width_rules(const AttentionBlock& b, Int declared_head_dim, std::vector<Finding>& out) {
  // Every product and remainder below is checked: a hostile width or head count makes the
  // number unknown, and a rule only fires on what is known.
  Int h = b.heads, w = b.width, d = b.head_dim;
  if (!h.positive() || !w.positive()) return;
  if (Int rest = floor_mod(w, h); rest.positive()) {
    out.push_back(make("heads-not-divisor", b.index,
                       "width " + n(w) + " is not divisible by " + n(h) + " heads (" + n(w) + " / " + n(h) +
                           " leaves " + n(rest) + "): no per-head split of the width exists" +
                           (d ? "; this block uses " + n(h) + " heads × " + n(d) + " = " + n(h * d) : std::string())));
  }
  if (differ(d, b.k_head_dim)) {
    out.push_back(make("qk-dim-mismatch", b.index,
                       "Q heads have " + n(d) + " features but K heads have " + n(Int(b.k_head_dim)) +
                           ": MatMul(Q, Kᵀ) needs equal sizes, so this block's head numbers cannot be trusted"));
  }
  std::string versus = "this block has " + n(b.total) + " parameters, " +
                       (b.standard ? percent(b.total, b.standard) + " of the standard " + n(b.standard)
                                   : std::string("and the standard")) +
                       " (" + standard_formula(*w, b.has_bias) + ")" + (b.standard ? "" : " does not fit in 64 bits");
  if (Int t = h * d; differ(t, w) && same(d, declared_head_dim)) {
    // The config states this head size: a decoupled head size by design (Gemma, Qwen3).
    out.push_back(make("decoupled-head-size", b.index,
                       "Q/K project " + n(w) + " → " + n(t) + " (" + n(h) + " heads × " + n(d) + "), as the config's head_dim = " +
                           n(d) + " declares: a head size chosen apart from width / heads (" + n(w) + " / " + n(h) +
                           (exact_div(w, h) ? " = " + n(exact_div(w, h)) : std::string()) + "), not a mix-up; " + versus + "."));
  } else if (Int t = h * d; differ(t, w)) {
    std::string msg = "Q/K project " + n(w) + " → " + n(t) + " (" + n(h) + " heads × " + n(d) + ") instead of " +
                      n(w) + ": " + versus + ". ";
    if (*t < *w) {
      msg += "This is what MATLAB's selfAttentionLayer builds when a per-head size is typed as NumKeyChannels, "
             "which is the total over heads: the count then falls as heads grow. If " + n(t) +
             " was meant per head, use " + n(h) + " × " + n(t) + " = " + n(h * t) +
             " channels. (Keras' key_dim is per head: key_dim = " + n(d) +
             " gives this same block, and its count grows with heads.)";
    } else {
      Int per_head = exact_div(w, h);
      msg += "This is what Keras' MultiHeadAttention builds when key_dim, which is per head, is set to " + n(d) +
             ": the count grows with the number of heads. For the standard block use key_dim = " + n(w) + " / " +
             n(h) + (per_head ? " = " + n(per_head) : std::string()) +
             ". (MATLAB's NumKeyChannels is the total over heads: " + n(t) +
             " channels give this same block whatever the heads.)";
    }
    msg += " Or it is a head size chosen on purpose, as Gemma (256) and Qwen3 (128) do: with the model's config.json "
           "beside it (or --model-config) stating head_dim = " + n(d) + ", headcount reports it as that design instead.";
    out.push_back(make("width-mismatch", b.index, msg));
  }
  Int kv = b.kv_heads ? Int(b.kv_heads) : h, dv = b.v_head_dim;
  if (Int t = h * dv; kv.positive() && differ(t, w) && !(same(d, dv) && differ(h * d, w))) {
    out.push_back(make("width-mismatch", b.index,
                       "V/O carry " + n(t) + " features (" + n(h) + " heads × " + n(dv) + ") instead of " + n(w) +
                           ": " + versus + ". The output projection is (" + n(h) + "·" + n(dv) + ") × d_out, "
                           "so a per-head value size that does not multiply back to the width changes the count "
                           "with the number of heads (Keras value_dim is per head)."));
  }
}

// A proven latent block: what it is, in one line, in place of the width and per-head rules, which
// compare heads with a width that latent attention does not split.
void latent_rules(const AttentionBlock& b, std::vector<Finding>& out) {
  const LatentAttention& la = *b.latent;
  Int h = b.heads;
  std::string msg = "multi-head latent attention: ";
  msg += la.q_rank > 0 ? "Q through a rank-" + n(Int(la.q_rank)) + " latent, " : std::string("Q projected directly, ");
  msg += "K and V through one rank-" + n(Int(la.kv_rank)) + " latent";
  if (la.rope_dim > 0) msg += " plus a " + n(Int(la.rope_dim)) + "-wide RoPE key shared by all heads";
  msg += "; " + n(h) + " heads of " + n(Int(la.qk_nope_dim)) + (la.rope_dim > 0 ? " + " + n(Int(la.rope_dim)) : std::string()) +
         " for Q/K and " + n(Int(la.v_head_dim)) + " for V. A decoder caches " + n(Int(la.kv_rank) + Int(la.rope_dim)) +
         " values per token and layer, not the " + n(h * (Int(la.qk_nope_dim) + Int(la.rope_dim) + Int(la.v_head_dim))) +
         " of full K and V.";
  out.push_back(make("latent-attention", b.index, msg));
}

void block_rules(const AttentionBlock& b, Int declared_head_dim, std::vector<Finding>& out) {
  for (const auto& what : b.overclaimed) out.push_back(make("count-exceeds-tensors", b.index, what));
  if (b.latent) {
    latent_rules(b, out);
  } else {
    width_rules(b, declared_head_dim, out);
  }
  std::vector<std::string> with, without;
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    const Projection& p = b.projection(r);
    if (!p.found) continue;
    std::string name = role_name(r);
    for (auto& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    (p.bias || !p.bias_input.empty() ? with : without).push_back(name);
  }
  if (!with.empty() && !without.empty()) {
    out.push_back(make("bias-inconsistent", b.index,
                       join_roles(with) + (with.size() == 1 ? " has a bias, " : " have biases, ") +
                           join_roles(without) + (without.size() == 1 ? " has none" : " have none") +
                           ": the block has " + n(b.total) + " parameters" +
                           (b.width > 0 ? ", between the standard " + n(4 * Int(b.width) * Int(b.width)) +
                                              " without biases and " + n(4 * Int(b.width) * Int(b.width) + 4 * Int(b.width)) +
                                              " with them"
                                        : std::string()) +
                           " (Whisper's K projection is bias-free by design)"));
  }
  if (b.heads && b.kv_heads && *b.kv_heads < *b.heads && *b.kv_heads > 0) {
    Int h = b.heads, kv = b.kv_heads;
    std::string kind = kv.is(1) ? "multi-query attention (MQA)" : "grouped-query attention (GQA)";
    std::string msg = n(h) + " query heads share " + n(kv) + " K/V " + (kv.is(1) ? "head" : "heads") + " (groups of " +
                      n(floor_div(h, kv)) + ")";
    // The widths only when the projections are in the graph: an unknown is never shown as 0.
    if (b.q.found && b.k.found && b.k.in_width > 0 && b.k.out_width > 0 && b.q.out_width > 0) {
      msg += ": K and V project " + n(b.k.in_width) + " → " + n(b.k.out_width) + " instead of " + n(b.q.out_width);
      // With h K/V heads, K and V (weights and biases) would be h / h_kv times as large.
      Int kv_total = Int::of_unsigned(b.k.total()) + Int::of_unsigned(b.v.total());
      Int full = Int::of_unsigned(b.total) + kv_total * (exact_div(h, kv) - 1);
      if (full.positive()) msg += ", so this block has " + n(b.total) + " parameters instead of the " + n(full) + " of full multi-head attention";
    } else {
      msg += ": K and V have fewer heads than Q; their projections are not in this graph";
    }
    msg += ". This is " + kind + ", not a mismatch.";
    out.push_back(make("grouped-kv", b.index, msg));
  }
  std::vector<std::string> per_head;
  size_t layers = 0;
  for (Role r : {Role::Q, Role::K, Role::V}) {
    const Projection& p = b.projection(r);
    size_t weights = 0;
    for (const auto& t : p.tensors) weights += t.bias ? 0 : 1;
    if (weights > 1) {
      per_head.push_back(role_name(r));
      layers += weights;
    }
  }
  if (!per_head.empty() && !b.latent) {  // a latent block's roles hold its factors, not heads
    for (auto& s : per_head) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    uint64_t total = 0;
    for (Role r : {Role::Q, Role::K, Role::V}) total += b.projection(r).total();
    out.push_back(make("per-head-projections", b.index,
                       join_roles(per_head) + " are computed by " + n(static_cast<uint64_t>(layers)) +
                           " separate per-head projections; they hold the same " + n(total) +
                           " parameters as one packed projection per role would, only run slower"));
  }
}

void shared_weights(const Model& m, const AttentionResult& att, std::vector<Finding>& out) {
  // (tensor, block) uses, and whole-tensor uses per tensor: sliced shares of one packed tensor
  // are not sharing. Sorted pairs, not a map of sets: a model of many layers has many tensors.
  std::vector<std::pair<int, int>> uses;
  std::vector<int> whole_uses(m.weights.size(), 0);
  for (const auto& b : att.blocks) {
    for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
      for (const auto& t : b.projection(r).tensors) {
        uses.emplace_back(t.weight, b.index);
        if (t.slice.empty()) ++whole_uses[static_cast<size_t>(t.weight)];
      }
    }
    for (const auto& e : b.extras) {
      uses.emplace_back(e.weight, b.index);
      ++whole_uses[static_cast<size_t>(e.weight)];
    }
  }
  std::sort(uses.begin(), uses.end());
  uses.erase(std::unique(uses.begin(), uses.end()), uses.end());
  for (size_t first = 0, end = 0; first < uses.size(); first = end) {
    const int wi = uses[first].first;
    end = first;
    while (end < uses.size() && uses[end].first == wi) ++end;
    const size_t users = end - first;  // blocks using the tensor, in index order
    const Weight& w = m.weights[static_cast<size_t>(wi)];
    bool several_blocks = users > 1;
    bool several_roles = whole_uses[static_cast<size_t>(wi)] > static_cast<int>(users);
    if (!several_blocks && !several_roles) continue;
    std::string list;
    for (size_t i = 0; i < users; ++i) {
      if (i) list += i + 1 == users ? " and " : ", ";
      list += std::to_string(uses[first + i].second);
    }
    out.push_back(make("shared-weights", std::nullopt,
                       "tensor '" + std::string(w.name) + "' (" + n(w.elements) + " parameters) is used by " +
                           (several_blocks ? std::string("blocks ") + list : "several projections of block " + list) +
                           " and counted once in the totals"));
  }
}

void duplicates(const Model& m, const std::vector<DuplicatePair>& pairs, std::vector<Finding>& out) {
  for (const auto& d : pairs) {
    const Weight& a = m.weights[d.original];
    const Weight& b = m.weights[d.copy];
    out.push_back(make("duplicate-weights", std::nullopt,
                       "tensors '" + std::string(a.name) + "' " + shape_string(a.dims) + " and '" + std::string(b.name) + "' " + shape_string(b.dims) + " hold " +
                           (d.transposed ? "the same values, one the transpose of the other" : "identical values") +
                           ": the file stores " + n(a.elements) +
                           " parameters twice, as exporters do for a tied embedding and LM head; "
                           "parameters.unique counts them once"));
  }
}

void unmatched(const AttentionResult& att, std::vector<Finding>& out) {
  for (const auto& u : att.unmatched) {
    // Classifier and other Softmaxes are listed in `unmatched` but not flagged.
    if (u.reason.rfind("looks like attention", 0) != 0) continue;
    out.push_back(make("unmatched-softmax", std::nullopt,
                       "Softmax '" + u.name + "' " + u.reason +
                           ": its projections are missing from the attention total"));
  }
  // Softmaxes never examined (a graph built to make matching expensive) may be attention: one
  // finding says how many.
  size_t not_examined = 0;
  const UnmatchedSoftmax* first = nullptr;
  for (const auto& u : att.unmatched) {
    if (u.reason.rfind("not examined", 0) != 0) continue;
    if (!first) first = &u;
    ++not_examined;
  }
  if (first) {
    out.push_back(make("unmatched-softmax", std::nullopt,
                       n(static_cast<uint64_t>(not_examined)) + (not_examined == 1 ? " Softmax, '" : " Softmaxes, the first '") +
                           first->name + (not_examined == 1 ? "', was not examined" : "', were not examined") +
                           first->reason.substr(std::string("not examined").size()) +
                           ": if they are attention, their projections are missing from the attention total"));
  }
}

// Each field the config declares and the graph contradicts.
void declared_rules(const Declared& d, std::vector<Finding>& out) {
  for (const auto& f : d.fields) {
    if (f.agreement != Agreement::Differs) continue;
    auto show = [&](Int v) { return f.boolean ? std::string(*v ? "true" : "false") : n(v); };
    out.push_back(make("config-mismatch", std::nullopt,
                       d.config.format + (f.derived_from.empty() ? " declares " + f.key : " implies " + f.key + " = " + f.derived_from) +
                           " = " + show(f.declared) + ", but the graph holds " +
                           (f.boolean ? std::string(*f.found ? "tied" : "untied") + " embeddings" : show(f.found)) +
                           " (" + f.note + "): the model and the description beside it disagree"));
  }
}

void quantized(const Model& m, std::vector<Finding>& out) {
  uint64_t packed = 0, packed_elements = 0, packed_bytes = 0, int4 = 0, int4_elements = 0, q8 = 0, q8_elements = 0;
  uint64_t moe_packed = 0, moe_elements = 0, moe_bytes = 0;
  for (const Weight& w : m.weights) {
    if (!w.parameter) continue;
    bool moe = std::any_of(w.consumers.begin(), w.consumers.end(),
                           [&](int ni) { return m.nodes[ni].rec->op_type() == "QMoE"sv; });
    if (w.packed && moe) {
      ++moe_packed;
      moe_elements += w.elements;
      moe_bytes += w.bytes;
    } else if (w.packed) {
      ++packed;
      packed_elements += w.elements;
      packed_bytes += w.bytes;
    } else if (dtype_bits(w.dtype) == 4) {
      ++int4;
      int4_elements += w.elements;
    } else if ((w.dtype == onnx::TensorProto::INT8 || w.dtype == onnx::TensorProto::UINT8) && w.dims.size() >= 2) {
      for (int ni : w.consumers) {
        if (m.nodes[ni].rec->op_type() == "DequantizeLinear"sv) {
          ++q8;
          q8_elements += w.elements;
          break;
        }
      }
    }
  }
  if (packed) {
    out.push_back(make("quantized-weights", std::nullopt,
                       n(packed) + " MatMulNBits weights hold " + n(packed_elements) +
                           " parameters, counted as K × N from the operator attributes, not as the " + n(packed_bytes) +
                           " bytes of their packed blobs"));
  }
  if (moe_packed) {
    out.push_back(make("quantized-weights", std::nullopt,
                       n(moe_packed) + " 4-bit QMoE expert weights hold " + n(moe_elements) + " parameters, two per byte of their " +
                           n(moe_bytes) + " bytes; their scales are stored apart and counted as such"));
  }
  if (int4) {
    out.push_back(make("quantized-weights", std::nullopt,
                       n(int4) + " tensors are 4-bit (" + n(int4_elements) + " parameters, two per byte)"));
  }
  if (q8) {
    out.push_back(make("quantized-weights", std::nullopt,
                       n(q8) + " int8 weights behind DequantizeLinear hold " + n(q8_elements) +
                           " parameters, one per element; their scales and zero points are stored and counted too"));
  }
}

void checkpoint_total_size(const Model& m, std::vector<Finding>& out) {
  if (!m.checkpoint || !m.checkpoint->declared_total_size) return;
  uint64_t held = 0;
  for (const CheckpointTensor& t : m.checkpoint->tensors) held += t.bytes;  // each below the file's size: no overflow in practice
  if (held == *m.checkpoint->declared_total_size) return;
  out.push_back(make("checkpoint-total-size", std::nullopt,
                     "the index states a total_size of " + n(*m.checkpoint->declared_total_size) + " bytes, but its " +
                         std::to_string(m.checkpoint->files.size() - 1) + " shards hold " + n(held) + " bytes of tensors"));
}

// GGUF tensors whose rows are not whole blocks (read packed across the tensor): one finding each.
void gguf_partial_blocks(const Model& m, std::vector<Finding>& out) {
  if (!m.checkpoint) return;
  for (const CheckpointTensor& t : m.checkpoint->tensors) {
    if (!t.partial_rows) continue;
    const GgmlType* type = nullptr;
    for (uint32_t id = 0; id < 256 && !type; ++id) {
      const GgmlType* g = ggml_type(id);
      if (g && t.dtype == g->name) type = g;
    }
    const uint64_t block = type ? type->block_elements : 0;
    const std::string row = t.shape.empty() ? "1" : n(static_cast<uint64_t>(t.shape.back()));
    out.push_back(make("gguf-partial-blocks", std::nullopt,
                       "tensor '" + t.name + "' (" + t.dtype + "): its rows of " + row +
                           " elements are not whole blocks of " + n(block) + "; its " + n(t.elements) +
                           " elements are packed across the tensor in " + n(block ? t.elements / block : 0) +
                           " blocks (" + n(t.bytes) + " bytes), which llama.cpp's loader refuses"));
  }
}

void external_data(const Model& m, std::vector<Finding>& out) {
  // Per missing file, in first-seen order: its own tensors and parameters.
  std::vector<std::string> missing_files;
  std::map<std::string, std::pair<uint64_t, uint64_t>> missing;  // file -> (tensors, parameters)
  for (const Weight& w : m.weights) {
    if (w.external_status() != ExternalStatus::Missing && w.external_status() != ExternalStatus::SizeMismatch) continue;
    const Weight::External& x = *w.external;
    const std::string location(x.location);
    if (x.status == ExternalStatus::Missing) {
      if (!missing.count(location)) missing_files.push_back(location);
      auto& [tensors, elements] = missing[location];
      ++tensors;
      elements += w.parameter ? w.elements : 0;
    } else if (x.status == ExternalStatus::SizeMismatch) {
      if (x.length >= 0 && static_cast<uint64_t>(x.length) != w.bytes) {
        out.push_back(make("external-data-size-mismatch", std::nullopt,
                           "tensor '" + std::string(w.name) + "' needs " + n(w.bytes) + " bytes by its shape, but its external "
                           "data length is " + n(static_cast<uint64_t>(x.length)) + " (at offset " +
                               n(x.offset) + " of '" + location + "')"));
        continue;
      }
      out.push_back(make("external-data-size-mismatch", std::nullopt,
                         "tensor '" + std::string(w.name) + "' needs " + n(w.bytes) + " bytes at offset " + n(x.offset) +
                             " of '" + location + "'" +
                             (x.length >= 0 ? " (length " + n(static_cast<uint64_t>(x.length)) + ")" : std::string()) +
                             ", but that file has " + n(x.file_size) + " bytes"));
    }
  }
  for (const auto& f : missing_files) {
    out.push_back(make("external-data-missing", std::nullopt,
                       "external data file '" + f + "' is not next to the model; " + n(missing[f].first) +
                           " tensors (" + n(missing[f].second) + " parameters) were counted from their dims alone"));
  }
}

// One line per model with experts: how many, how many run, the total and the active count.
void expert_rules(const ExpertResult& x, uint64_t framework, std::optional<uint64_t> active, std::vector<Finding>& out) {
  if (x.layers.empty()) return;
  std::set<std::string> shapes;
  for (const auto& l : x.layers) {
    shapes.insert((l.experts ? std::to_string(*l.experts) : std::string("?")) + " experts, " +
                  (l.top_k ? std::to_string(*l.top_k) : std::string("?")) + " active");
  }
  std::string what;
  for (const auto& s : shapes) what += (what.empty() ? "" : "; ") + s;
  std::string layers = std::to_string(x.layers.size()) + (x.layers.size() == 1 ? " MoE layer" : " MoE layers");
  std::string msg = what + " (" + layers + "): " + n(framework) + " parameters, ";
  if (active) {
    msg += n(*active) + " per token";
  } else {
    msg += "the count per token is unknown (a layer's experts, top-k or the size of one expert is not known)";
  }
  out.push_back(make("mixture-of-experts", std::nullopt, msg));
}

}  // namespace

std::vector<Finding> run_rules(const Model& model, const AttentionResult& attention,
                               const std::vector<DuplicatePair>& pairs, const Declared* declared,
                               const ExpertResult* experts, uint64_t framework_parameters,
                               std::optional<uint64_t> active_parameters) {
  std::vector<Finding> out;
  if (declared) declared_rules(*declared, out);
  external_data(model, out);
  checkpoint_total_size(model, out);
  gguf_partial_blocks(model, out);
  // A head size the config states (not one its family derives from width / heads).
  Int head_dim;
  if (declared && declared->config.key_of.count("head_dim") && !declared->config.derived_from.count("head_dim")) {
    head_dim = declared->config.head_dim;
  }
  for (const auto& b : attention.blocks) block_rules(b, head_dim, out);
  unmatched(attention, out);
  shared_weights(model, attention, out);
  duplicates(model, pairs, out);
  quantized(model, out);
  if (experts) expert_rules(*experts, framework_parameters, active_parameters, out);
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

}  // namespace headcount
