// text.cpp: the text report, for a person at a terminal: aligned tables, wrapped findings, and a
// summary table after a run over several models.
#include <algorithm>
#include <cstdio>

#include <map>
#include <set>

#include "fold.h"
#include "fidelity_rows.h"
#include "layout.h"
#include "renderers.h"
#include "headcount/checkpoint_index.h"
#include "headcount/version.h"

namespace headcount::renderers {
namespace {

// Under a table with folded rows: what the first folded row means, and how to list every entry.
// Says whether it printed.
bool fold_legend(const std::vector<Fold>& runs, const char* plural, const char* singular, std::ostream& out) {
  for (const auto& r : runs) {
    if (!r.folded()) continue;
    out << "  " << wrap(fold_cell(r) + ": " + plural + " " + std::to_string(r.from) + " to " + std::to_string(r.to) +
                            ", identical, in one row; --all-blocks lists each " + singular + ".", 2, 4)
        << "\n";
    return true;
  }
  return false;
}

// The token mixers that are not softmax attention: a table, each distinct mixer's tensors by
// role, and what proves them.
void mixers_text(const Audit& a, bool all_blocks, std::ostream& out) {
  const MixerResult& x = a.mixers;
  if (x.mixers.empty() && x.notes.empty()) return;
  out << "\ntoken mixers (not softmax attention)\n";
  if (!x.mixers.empty()) {
    std::vector<Fold> runs = mixer_folds(x.mixers, all_blocks);
    Table t;
    t.right = {true, false, false, true, true};
    t.rows.push_back({"#", "name", "kind", "parameters", "state/sequence"});
    for (const auto& r : runs) {
      const Mixer& mx = x.mixers[r.first];
      t.rows.push_back({fold_cell(r), truncate(r.name, 24), mixer_kind_words(mx.kind), with_commas(mx.total),
                        mx.state_bytes ? binary_bytes(*mx.state_bytes) : std::string("?")});
    }
    t.print(out, "  ");
    out << "  state/sequence: the recurrent state a decoder keeps per sequence, whatever the context.\n";
    fold_legend(runs, "mixers", "mixer", out);
    for (const auto& r : runs) {
      const Mixer& mx = x.mixers[r.first];
      // Its tensors by role (a weight and its bias under one role), in the order they run.
      std::vector<std::pair<std::string, uint64_t>> roles;
      for (const auto& tn : mx.tensors) {
        auto it = std::find_if(roles.begin(), roles.end(), [&](const auto& p) { return p.first == tn.role; });
        if (it == roles.end()) roles.push_back({tn.role, tn.elements});
        else it->second += tn.elements;
      }
      std::string list;
      for (const auto& [role, n] : roles) list += (list.empty() ? "" : ", ") + role + " " + with_commas(n);
      std::string which = std::string(r.folded() ? "mixers " : "mixer ") + index_range(r.from, r.to) + ": ";
      out << "  " << wrap(which + list, 2, 4) << "\n";
      out << "    " << wrap("evidence: " + mx.evidence, 4, 6) << "\n";
      out << "    " << wrap("state: " + (mx.state_from.empty() ? std::string("unknown") : mx.state_from), 4, 6) << "\n";
      for (const auto& note : mx.notes) out << "    " << wrap(note, 4, 6) << "\n";
    }
  }
  for (const auto& note : x.notes) out << "  " << wrap(note, 2, 4) << "\n";
}

// The mixture-of-experts layers: a table, then the active count.
void experts_text(const Audit& a, bool all_blocks, std::ostream& out) {
  const ExpertResult& x = a.experts;
  if (x.layers.empty()) {  // no mixture of experts: only what was looked at and left out
    if (!x.notes.empty() || x.unexamined) out << "\n";
    for (const auto& note : x.notes) out << "experts: " << wrap(note, 9, 4) << "\n";
    if (x.unexamined) {
      out << "experts: " << wrap(count_of(x.unexamined, "TopK node was", "TopK nodes were") + " not examined: matching used up "
                                 "the node visits a graph of this size gets", 9, 4) << "\n";
    }
    return;
  }
  out << "\nmixture of experts (" << x.layers.size() << (x.layers.size() == 1 ? " layer" : " layers") << ")\n";
  Table t;
  t.right = {true, false, false, true, true, true, true, true, true};
  t.rows.push_back({"#", "name", "form", "experts", "top-k", "one expert", "routed", "router", "shared"});
  const std::vector<Fold> runs = layer_folds(x.layers, all_blocks);
  for (const auto& r : runs) {
    const ExpertLayer& l = x.layers[r.first];
    std::string experts = l.experts ? std::to_string(*l.experts) : "?";
    if (l.experts && l.found != *l.experts) experts = std::to_string(l.found) + " of " + experts;
    t.rows.push_back({fold_cell(r), truncate(r.name, 24), l.form, experts,
                      l.top_k ? std::to_string(*l.top_k) : "?", l.expert ? with_commas(*l.expert) : "?",
                      with_commas(l.routed), with_commas(l.router),
                      l.shared_experts ? with_commas(l.shared) + " (" + std::to_string(l.shared_experts) + ")" : "0"});
  }
  t.print(out, "  ");
  out << "  one expert: its weights and biases. shared: experts every token runs (how many).\n";
  fold_legend(runs, "layers", "layer", out);
  for (const auto& r : runs) {
    for (const auto& note : x.layers[r.first].notes) {
      std::string head = std::string("  ") + (r.folded() ? "layers " : "layer ") + index_range(r.from, r.to) + ":";
      out << head << " " << wrap(note, display_width(head) + 1, 4) << "\n";
    }
  }
  for (const auto& note : x.notes) out << "  " << wrap(note, 2, 4) << "\n";
  if (x.unexamined) {
    out << "  " << wrap(count_of(x.unexamined, "TopK node was", "TopK nodes were") + " not examined: matching used up the node "
                        "visits a graph of this size gets", 2, 4) << "\n";
  }
  std::string active;
  if (a.active_parameters && x.idle) {
    active = with_commas(*a.active_parameters) + " of " + with_commas(a.framework.parameters) +
             " parameters per token: the framework count less " + with_commas(*x.idle) +
             " in the experts each token leaves idle ((experts − k) · one expert, summed over the layers)";
  } else {
    active = "unknown: a layer's experts, top-k or the size of one expert is not known";
  }
  out << "  active      " << wrap(active, 14, 14) << "\n";
}

// One line of the cost section: its label in a column of 12, then the text wrapped under it.
void cost_line(const std::string& label, const std::string& text, std::ostream& out) {
  std::string head = "  " + label + std::string(label.size() < 12 ? 12 - label.size() : 1, ' ');
  out << head << wrap(text, head.size(), head.size()) << "\n";
}

// The K/V cache: per token and at the context, the element types, and why it is a lower bound.
void kv_cache_line(const Cost& c, std::ostream& out) {
  const char* at_least = c.kv_lower_bound ? "at least " : "";
  std::string unknown;  // why the K/V cache is a lower bound: a block whose K/V size is unknown
  for (const auto& bc : c.blocks) {
    if (!bc.unknown.empty() && !bc.kv_bytes_per_token && bc.shared_with < 0) {
      unknown = "block " + std::to_string(bc.block) + ": " + bc.unknown;
      break;
    }
  }
  std::string kv = std::string(at_least) + with_commas(c.kv_bytes_per_token) + " bytes per token (" +
                   binary_bytes(c.kv_bytes_per_token) + ")";
  if (c.kv_bytes_at_context) {
    kv += ", " + with_commas(*c.kv_bytes_at_context) + " at " + with_commas(c.context) + " tokens" +
          (c.batch > 1 ? " x " + with_commas(c.batch) + " sequences" : "") + " (" + binary_bytes(*c.kv_bytes_at_context) + ")";
  }
  std::set<std::string> sources;
  for (const auto& bc : c.blocks) {
    if (bc.bits) sources.insert(bc.dtype + (bc.dtype_from == "--kv-dtype" ? " (--kv-dtype)" : ""));
  }
  if (!sources.empty()) {
    std::string list;
    for (const auto& x : sources) list += (list.empty() ? "" : ", ") + x;
    kv += "; elements of " + list;
  }
  if (c.kv_lower_bound) kv += "; unknown for " + unknown;
  cost_line("K/V cache", kv, out);
}

// Grouped K/V heads: how much smaller the cache is than with full multi-head attention.
void grouped_kv_line(const Cost& c, std::ostream& out) {
  if (!c.full_mha_kv_bytes_per_token || !c.kv_bytes_per_token) return;
  uint64_t full = *c.full_mha_kv_bytes_per_token;
  std::string ratio = full % c.kv_bytes_per_token == 0 ? std::to_string(full / c.kv_bytes_per_token)
                                                       : [&] {
                                                           char buf[32];
                                                           std::snprintf(buf, sizeof buf, "%.2f",
                                                                         static_cast<double>(full) /
                                                                             static_cast<double>(c.kv_bytes_per_token));
                                                           return std::string(buf);
                                                         }();
  cost_line("grouped K/V", with_commas(c.kv_bytes_per_token) + " per token instead of " + with_commas(full) +
                               " with full multi-head attention: " + ratio + "x smaller" +
                               (c.kv_parameters_saved ? ", and " + with_commas(c.kv_parameters_saved) + " fewer K/V projection weights" : ""),
            out);
}

// Sliding windows: which blocks slide, over how many tokens, and what that saves at the context.
void windows_line(const Cost& c, std::ostream& out) {
  if (!c.kv_window_saved_bytes) return;
  std::map<int64_t, std::vector<int>> by_window;
  for (const auto& bc : c.blocks) {
    if (bc.window && !bc.cross && bc.shared_with < 0) by_window[*bc.window].push_back(bc.block);
  }
  std::string which;
  for (const auto& [w, blocks] : by_window) {
    which += (which.empty() ? "" : "; ") + std::string(blocks.size() == 1 ? "block " : "blocks ") + index_ranges(blocks) +
             " over " + with_commas(static_cast<uint64_t>(w)) + (w == 1 ? " token" : " tokens");
  }
  cost_line("windows", which + ": each keeps min(context, window) tokens, so the cache at " + with_commas(c.context) +
                           " tokens holds " + with_commas(*c.kv_bytes_at_context) + " bytes, " +
                           with_commas(*c.kv_window_saved_bytes) + " fewer than without windows",
            out);
}

// The MACs per token, part by part.
void macs_line(const Cost& c, std::ostream& out) {
  std::string macs = std::string(c.macs_lower_bound ? "at least " : "") + with_commas(c.macs_per_token) + ": ";
  std::vector<std::string> parts;
  if (c.macs_attention_projections) parts.push_back("attention projections " + with_commas(c.macs_attention_projections));
  if (c.macs_attention_scores) parts.push_back("attention scores " + with_commas(c.macs_attention_scores) + " (against " + with_commas(c.context) + " cached tokens)");
  if (c.macs_feed_forward) parts.push_back("feed-forward " + with_commas(c.macs_feed_forward));
  if (c.macs_experts) parts.push_back("routed experts " + with_commas(c.macs_experts) + " (the k each token runs)");
  if (c.macs_lm_head) parts.push_back("LM head " + with_commas(c.macs_lm_head));
  if (c.macs_mixers) parts.push_back("token mixers " + with_commas(c.macs_mixers));
  if (c.macs_other) parts.push_back("other products " + with_commas(c.macs_other));
  for (size_t i = 0; i < parts.size(); ++i) macs += (i ? ", " : "") + parts[i];
  if (parts.empty()) macs += "no matrix product with a stored weight";
  cost_line("MACs/token", macs, out);
}

// The K/V cache and MACs per token, with what each figure rests on.
void cost_text(const Cost& c, std::ostream& out) {
  out << "\ninference cost (--context " << with_commas(c.context) << ", --batch " << with_commas(c.batch) << ")\n";
  if (!c.blocks.empty()) {
    kv_cache_line(c, out);
    grouped_kv_line(c, out);
    windows_line(c, out);
    if (c.cross_kv_bytes_per_encoder_token) {
      cost_line("cross K/V", with_commas(c.cross_kv_bytes_per_encoder_token) +
                                 " bytes per encoder token, computed once per sequence from the encoder's output",
                out);
    }
  }
  if (c.state_bytes || c.state_lower_bound) {
    cost_line("state", std::string(c.state_lower_bound ? "at least " : "") + with_commas(c.state_bytes) + " bytes (" +
                           binary_bytes(c.state_bytes) + ") of recurrent state in the token mixers" +
                           (c.batch > 1 ? " for " + with_commas(c.batch) + " sequences" : " per sequence") +
                           ", whatever the context" + (c.state_lower_bound ? "; a mixer's state is unknown" : ""),
              out);
  }
  macs_line(c, out);
  if (c.prefill_macs) {
    cost_line("prefill", with_commas(*c.prefill_macs) + " MACs for " + (c.batch > 1 ? with_commas(c.batch) + " prompts" : "a prompt") +
                             " of " + with_commas(c.context) + " tokens (every token against the whole prompt, as the graph computes it)",
              out);
  }
  for (const auto& n : c.notes) cost_line("note", n, out);
}

// How the framework's own count (PyTorch's sum(p.numel())) follows from what the file stores,
// when the two differ.
void framework_text(const Audit& a, std::ostream& out) {
  const Inventory& inv = a.inventory;
  const FrameworkView& fw = a.framework;
  if (fw.parameters == inv.stored) return;
  std::string how = with_commas(inv.stored) + " stored";
  if (a.unique != inv.stored) {
    how += " - " + with_commas(inv.stored - a.unique) + " in " + std::to_string(a.duplicates.size()) +
           (a.duplicates.size() == 1 ? " duplicate copy" : " duplicate copies");
  }
  if (fw.buffer_elements) {
    how += " - " + with_commas(fw.buffer_elements) + " in " + std::to_string(fw.buffers.size()) +
           (fw.buffers.size() == 1 ? " buffer" : " buffers");
  }
  if (fw.constant_elements) {
    how += " - " + with_commas(fw.constant_elements) + " in " +
           count_of(fw.constants.size(), "scalar constant", "scalar constants");
  }
  if (fw.merged_elements) {
    how += " + " + with_commas(fw.merged_elements) + " stored once for " +
           count_of(fw.merged.size(), "more parameter", "more parameters") + " (Identity copies)";
  }
  out << "  framework   " << with_commas(fw.parameters) << ", as the framework counts its parameters: "
      << wrap(how, 14 + with_commas(fw.parameters).size() + 43, 14) << "\n";
}

// The head of the report: what the file is, and the counts everything below breaks down.
void summary_text(const Audit& a, std::ostream& out) {
  const Model& m = a.model;
  const Inventory& inv = a.inventory;
  out << "headcount " << kVersion << ": " << visible(m.path) << "\n";
  if (a.remote) {
    const RemoteRead& r = *a.remote;
    out << "  source      " << wrap(r.url + (r.commit.empty() ? "" : " (commit " + r.commit.substr(0, 12) + ")") + "; " +
                                        with_commas(r.bytes) + " bytes fetched in " + count_of(r.requests, "request", "requests") +
                                        ", no tensor's values",
                                    14, 14)
        << "\n";
  }
  if (m.checkpoint) {
    const Checkpoint& c = *m.checkpoint;
    std::string what = c.format;
    if (c.kind == FormatKind::Gguf) {
      what += " v" + std::to_string(c.gguf_version);
      if (c.big_endian) what += " big-endian (its header read byte-swapped; no tensor's values read)";
      auto arch = c.metadata.find("general.architecture");
      if (arch != c.metadata.end() && arch->second.type == CheckpointValue::Type::String) what += ", architecture " + arch->second.s;
    }
    out << "  checkpoint  " << visible(what) << "; " << count_of(c.files.size(), "file", "files") << ", no graph: its parts are read from the tensor names\n";
  } else {
    out << "  model       " << producer_string(*m.proto) << ", ir " << m.proto->ir_version() << ", "
        << opset_string(*m.proto) << "; " << count_of(m.graphs.size(), "graph", "graphs") << ", "
        << count_of(m.nodes.size(), "node", "nodes") << "\n";
  }
  out << "  parameters  " << with_commas(inv.stored) << " stored in " << count_of(inv.tensors, "tensor", "tensors") << " ("
      << human_bytes(inv.bytes) << ")\n";
  framework_text(a, out);
  const auto& att = a.attention;
  out << "  attention   " << with_commas(att.parameters) << " in " << count_of(att.blocks.size(), "block", "blocks") << " ("
      << percent(att.parameters, inv.stored) << " of stored)\n";
  if (!a.mixers.mixers.empty()) {
    out << "  mixers      " << with_commas(a.composition.mixers) << " in "
        << count_of(a.mixers.mixers.size(), "token mixer", "token mixers") << " (" << percent(a.composition.mixers, inv.stored)
        << " of stored), not softmax attention\n";
  }
}

// The attention blocks' table: one row per run of identical blocks. Says whether it told the
// reader how to list every block.
bool blocks_table(const AttentionResult& att, const std::vector<Fold>& runs, std::ostream& out) {
  out << "\nattention blocks\n";
  // A window column only when some block slides: "4" for a window of 4 tokens, "full" else.
  bool windows = std::any_of(att.blocks.begin(), att.blocks.end(), [](const AttentionBlock& b) { return b.window.has_value(); });
  Table t;
  t.right = {true, false, false, false, true, true, true, true, true, true};
  t.rows.push_back({"#", "name", "form", "kind", "heads", "width", "d_k", "parameters", "of std"});
  if (windows) t.rows.back().push_back("window");
  for (const auto& r : runs) {
    const AttentionBlock& b = att.blocks[r.first];
    std::string heads = optional_int(b.heads);
    if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) heads += "/" + std::to_string(*b.kv_heads);
    t.rows.push_back({fold_cell(r), truncate(r.name, 24), b.form, b.kind, heads, b.width > 0 ? std::to_string(b.width) : "?",
                      optional_int(b.head_dim), with_commas(b.total), percent(b.total, b.standard)});
    if (windows) t.rows.back().push_back(b.window ? with_commas(static_cast<uint64_t>(*b.window)) : "full");
  }
  t.print(out, "  ");
  out << "  heads a/b: a query heads, b key/value heads. of std: share of the standard 4·width² (+4·width).\n";
  if (windows) out << "  window: the tokens each query attends to (a sliding window); full: no window found.\n";
  return fold_legend(runs, "blocks", "block", out);
}

// One line per run of latent attention blocks: the ranks and head sizes.
void latent_text(const AttentionResult& att, const std::vector<Fold>& runs, std::ostream& out) {
  for (const auto& r : runs) {
    const AttentionBlock& b = att.blocks[r.first];
    if (!b.latent) continue;
    const LatentAttention& la = *b.latent;
    std::string rope = la.rope_dim ? " + " + std::to_string(la.rope_dim) + " RoPE" : std::string();
    std::string line = "latent attention in " + std::string(r.folded() ? "blocks " : "block ") + index_range(r.from, r.to) + ": " +
                       (la.q_rank ? "Q through rank " + std::to_string(la.q_rank) : std::string("Q direct")) +
                       ", K/V through rank " + std::to_string(la.kv_rank) + rope + "; per head Q/K " +
                       std::to_string(la.qk_nope_dim) + rope + ", V " + std::to_string(la.v_head_dim) + ".";
    out << "  " << wrap(line, 2, 4) << "\n";
  }
}

// The Q/K/V/O table: each projection's parameters per run of blocks, and the extras beside them.
void projections_table(const AttentionResult& att, const std::vector<Fold>& runs, std::ostream& out) {
  bool extras = std::any_of(att.blocks.begin(), att.blocks.end(), [](const AttentionBlock& b) { return !b.extras.empty(); });
  out << "\nQ/K/V/O per block (weight + bias" << (extras ? "; extras: learned parameters beside the projections" : "")
      << ")\n";
  Table p;
  p.right = {true, true, true, true, true, true};
  p.rows.push_back({"#", "Q", "K", "V", "O"});
  if (extras) p.rows.back().push_back("extras");
  for (const auto& r : runs) {
    const AttentionBlock& b = att.blocks[r.first];
    // K or V read from a graph input: its projection is elsewhere; a bias share may still be here.
    auto cell = [](const Projection& pr) {
      if (pr.from_input.empty() && pr.weight_input.empty()) return with_commas(pr.total());
      return pr.total() ? with_commas(pr.total()) + " + input" : std::string("input");
    };
    p.rows.push_back({fold_cell(r), cell(b.q), cell(b.k), cell(b.v), cell(b.o)});
    if (!extras) continue;
    uint64_t n = 0;
    std::string roles;
    for (const auto& e : b.extras) {
      n += e.elements;
      std::string role = extra_role_name(e.role);
      if ((roles + ",").find(role + ",") == std::string::npos) roles += (roles.empty() ? " (" : ", ") + role;
    }
    p.rows.back().push_back(b.extras.empty() ? "" : with_commas(n) + roles + ")");
  }
  p.print(out, "  ");
}

// The count of attention blocks, and every softmax that is not attention with why.
void unmatched_text(const Audit& a, std::ostream& out) {
  const auto& att = a.attention;
  if (att.unmatched.empty()) {
    out << "  " << count_of(att.blocks.size(), "attention block", "attention blocks")
        << (a.model.checkpoint ? ", one per layer that holds attention tensors by name\n" : "; every softmax is accounted for\n");
    return;
  }
  out << "  " << count_of(att.blocks.size(), "attention block", "attention blocks") << "; "
      << count_of(att.unmatched.size(), "softmax is", "softmaxes are") << " not attention:\n";
  for (const auto& u : att.unmatched) {
    std::string head = "    " + u.name + ":";
    out << head << " " << wrap(u.reason, head.size() + 1, 6) << "\n";
  }
}

// The findings, one line per run of blocks with the same finding. `told`: the reader was already
// told how to list every block.
void findings_text(const Audit& a, bool all_blocks, bool told, std::ostream& out) {
  if (a.findings.empty()) return;
  out << "\nfindings\n";
  bool folded = false;
  for (const auto& g : finding_folds(a.findings, all_blocks)) {
    const Finding& f = a.findings[g.first];
    std::string head = "  " + std::string(severity_name(f.severity)) + " [" + f.rule + "]" +
                       (g.blocks.empty() ? std::string() : " " + blocks_text(g.blocks)) + ":";
    out << head << " " << wrap(f.message, display_width(head) + 1, 4) << "\n";
    folded = folded || g.folded();
  }
  if (folded && !told) out << "  (--all-blocks lists the findings of each block apart)\n";
}

// What the config beside the model declares against what was found, and the family's formula.
void declared_text(const Audit& a, std::ostream& out) {
  if (!a.declared) {
    if (!a.declared_error.empty()) out << "\nwhat the config declares: " << wrap(a.declared_error + " (ignored)", 28, 4) << "\n";
    return;
  }
  const Declared& d = *a.declared;
  out << "\nwhat the config declares (" << visible(d.config.file)
      << (d.config.model_type.empty() ? std::string() : ", model_type " + visible(d.config.model_type)) << ")\n";
  Table t;
  t.right = {false, false, true, true, false};
  t.rows.push_back({"field", "key", "declared", "found", ""});
  auto show = [](const DeclaredField& f, Int v) {
    if (!v) return std::string("-");
    return f.boolean ? std::string(*v ? "yes" : "no") : with_commas(static_cast<uint64_t>(std::max<int64_t>(*v, 0)));
  };
  for (const auto& f : d.fields) {
    std::string verdict = agreement_name(f.agreement);
    if (f.agreement == Agreement::NotCheckable) verdict += !f.declared ? ": not declared" : ": " + f.note;
    t.rows.push_back({f.label, f.derived_from.empty() ? f.key : "(" + f.derived_from + ")", show(f, f.declared),
                      show(f, f.found), verdict});
  }
  t.print(out, "  ");
  if (d.count) {
    out << "  " << visible(d.count->family) << " formula: " << with_commas(d.count->total) << " parameters; "
        << wrap(d.count_note, 4 + d.count->family.size() + 10 + with_commas(d.count->total).size() + 13, 4) << "\n";
    for (const auto& p : d.count->parts) out << "    " << p.part << ": " << wrap(p.formula, 6 + p.part.size(), 6) << "\n";
  } else if (!d.config.model_type.empty()) {
    out << "  no formula for model_type " << visible(d.config.model_type) << ": its fields are compared, its count is not\n";
  }
}

// Where the parameters are: one row per part the model has.
void composition_text(const Audit& a, std::ostream& out) {
  out << "\nwhere the parameters are\n";
  Table c;
  c.right = {false, true, true};
  const Composition& comp = a.composition;
  for (auto [label, v] : {std::pair<const char*, uint64_t>{"attention (Q/K/V/O)", comp.attention},
                          {"embeddings", comp.embeddings}, {"feed-forward", comp.feed_forward},
                          {"routed experts", comp.routed_experts}, {"routers", comp.routers},
                          {"token mixers", comp.mixers}, {"LoRA adapter", comp.adapter}, {"LM head", comp.lm_head}, {"norms", comp.norms},
                          {"buffers", comp.buffers},
                          {"scalar constants", comp.constants}, {"everything else", comp.other}}) {
    bool moe_row = std::string(label) == "routed experts" || std::string(label) == "routers";
    if (moe_row && a.experts.layers.empty()) continue;  // only a mixture of experts has them
    if (std::string(label) == "scalar constants" && a.framework.constants.empty()) continue;  // only older exports store them
    if (std::string(label) == "LM head" && !comp.lm_head) continue;                  // only an untied head
    if (std::string(label) == "token mixers" && a.mixers.mixers.empty()) continue;   // only a hybrid has them
    if (std::string(label) == "LoRA adapter" && !a.adapter) continue;              // only an adapter has them
    c.rows.push_back({label, with_commas(v), percent(v, a.inventory.stored)});
  }
  c.print(out, "  ");
}

// What no part claimed, largest first, each with why (the first `top`).
void unclaimed_text(const Audit& a, int top, std::ostream& out) {
  const Model& m = a.model;
  const Composition& comp = a.composition;
  if (comp.unclaimed.empty() || top <= 0) return;
  out << "  everything else: what no part (attention, experts, feed-forward, embeddings, LM head, norms) claimed\n";
  size_t n = std::min(comp.unclaimed.size(), static_cast<size_t>(top));
  for (size_t i = 0; i < n; ++i) {
    const Weight& w = m.weights[static_cast<size_t>(comp.unclaimed[i])];
    std::string head = "    " + truncate(std::string(w.name), 40) + " " + shape_string(w.dims) + " " + with_commas(w.elements) + ":";
    out << head << " " << wrap(unclaimed_reason(m, comp.unclaimed[i]), head.size() + 1, 6) << "\n";
  }
  if (comp.unclaimed.size() > n) {
    out << "    ... and " << with_commas(comp.unclaimed.size() - n) << " more (--top N, or --format json for all)\n";
  }
}

// The buffers and scalar constants the framework does not count, each with why.
void not_parameters_text(const Audit& a, std::ostream& out) {
  const Model& m = a.model;
  const FrameworkView& fw = a.framework;
  if (!fw.buffers.empty()) {
    out << "\nbuffers (stored, not learned: the framework does not count them)\n";
    for (const auto& b : fw.buffers) {
      const Weight& w = m.weights[static_cast<size_t>(b.weight)];
      std::string head = "  " + std::string(w.name) + " " + shape_string(w.dims) + " " + with_commas(w.elements) + ":";
      out << head << " " << wrap(b.reason, head.size() + 1, 4) << "\n";
    }
  }
  if (!fw.constants.empty()) {
    out << "\nscalar constants (one-element tensors only arithmetic reads: not parameters)\n";
    for (const auto& c : fw.constants) {
      const Weight& w = m.weights[static_cast<size_t>(c.weight)];
      std::string head = "  " + std::string(w.name) + " " + shape_string(w.dims) + ":";
      out << head << " " << wrap(c.reason, head.size() + 1, 4) << "\n";
    }
  }
  if (!fw.values_read && a.remote) out << "  (a remote input: no value was fetched; buffers found by their use only)\n";
  else if (!fw.values_read) out << "  (--no-content: buffers found by their use only, no value was read)\n";
}

// The parameters by dtype (a checkpoint's with its bits per weight) and by storage.
void storage_text(const Audit& a, std::ostream& out) {
  const Inventory& inv = a.inventory;
  out << "\nby dtype\n";
  Table d;
  d.right = {false, true, true, true, true};
  // A checkpoint's quantization mix: bits per weight from each type's bytes (GGUF's block sizes).
  auto bits = [](uint64_t bytes, uint64_t elements) {
    if (elements == 0) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.2f", static_cast<double>(bytes) * 8.0 / static_cast<double>(elements));
    return std::string(b);
  };
  if (a.model.checkpoint) {
    d.rows.push_back({"dtype", "tensors", "parameters", "bytes", "bits/weight"});
    for (const auto& r : inv.by_dtype) {
      d.rows.push_back({r.key, with_commas(r.tensors), with_commas(r.elements), human_bytes(r.bytes), bits(r.bytes, r.elements)});
    }
    d.rows.push_back({"all", with_commas(inv.tensors), with_commas(inv.stored), human_bytes(inv.bytes), bits(inv.bytes, inv.stored)});
  } else {
    d.rows.push_back({"dtype", "tensors", "parameters", "bytes"});
    for (const auto& r : inv.by_dtype) d.rows.push_back({r.key, with_commas(r.tensors), with_commas(r.elements), human_bytes(r.bytes)});
  }
  d.print(out, "  ");
  if (inv.non_parameter_tensors) {  // every stored element is in a count or on this line
    std::string n = "not parameters: " + count_of(inv.non_parameter_tensors, "integer or bool tensor", "integer and bool tensors") +
                    ", " + with_commas(inv.non_parameter_elements) + " elements (shape data, indices, masks), in no count above";
    out << "  " << wrap(n, 2, 4) << "\n";
  }
  out << "\nby storage\n";
  Table s;
  s.right = {false, true, true, true};
  s.rows.push_back({"storage", "tensors", "parameters", "bytes"});
  for (const auto& r : inv.by_storage) s.rows.push_back({r.key, with_commas(r.tensors), with_commas(r.elements), human_bytes(r.bytes)});
  s.print(out, "  ");
}

// The largest tensors (the first `top`), with where each is stored.
void largest_text(const Audit& a, int top, std::ostream& out) {
  const Model& m = a.model;
  const Inventory& inv = a.inventory;
  if (inv.largest.empty() || top <= 0) return;
  out << "\nlargest tensors\n";
  Table l;
  l.right = {false, false, false, true, false};
  l.rows.push_back({"name", "shape", "dtype", "parameters", "storage"});
  size_t n = std::min(inv.largest.size(), static_cast<size_t>(top));
  for (size_t i = 0; i < n; ++i) {
    const Weight& w = m.weights[inv.largest[i]];
    std::string storage = storage_name(w.storage);
    if (w.external_status() == ExternalStatus::Missing) storage += " (data file missing)";
    if (w.external_status() == ExternalStatus::SizeMismatch) storage += " (data file too short)";
    if (w.external_status() == ExternalStatus::NotChecked) storage += " (data file not checked)";
    l.rows.push_back({truncate(std::string(w.name), 40), shape_string(w.dims), dtype_name(w.dtype), with_commas(w.elements), storage});
  }
  l.print(out, "  ");
  if (inv.largest.size() > n) out << "  ... and " << with_commas(inv.largest.size() - n) << " more (--top N, or --format json for all)\n";
}

// A number of a config (alpha, scale) as written: no trailing zeros.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A LoRA adapter: how it was made, then each target module with its rank and widths.
void adapter_text(const Audit& a, std::ostream& out) {
  if (!a.adapter) return;
  const Adapter& ad = *a.adapter;
  std::string head = ad.format + " " + ad.method + " adapter";
  if (ad.declared_rank) head += ", rank " + std::to_string(*ad.declared_rank);
  if (ad.alpha) head += ", alpha " + short_number(*ad.alpha);
  if (ad.scale) head += ", scale " + short_number(*ad.scale) + " (" + ad.scale_from + ")";
  if (!ad.base.empty()) head += ", for " + ad.base;
  out << "\nadapter\n  " << wrap(head + (ad.config.empty() ? ", no adapter config beside it" : ", read from " + ad.config), 2, 4) << "\n";
  Table t;
  t.right = {false, true, true, true, true, false};
  t.rows.push_back({"target", "layers", "rank", "in -> out", "parameters", ""});
  for (const AdapterTarget& x : ad.targets) {
    std::string ranks;
    for (int64_t r : x.ranks) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
    std::string widths = x.in && x.out ? std::to_string(x.in) + " -> " + std::to_string(x.out) : "varies";
    std::string what = x.reaches.empty() ? "" : "packed: " + x.reaches;
    if (x.magnitudes) what += std::string(what.empty() ? "" : "; ") + "DoRA magnitudes " + with_commas(x.magnitudes);
    t.rows.push_back({x.module, std::to_string(x.layers), ranks.empty() ? "?" : ranks, widths, with_commas(x.parameters), what});
  }
  t.print(out, "  ");
  std::string total = "total " + with_commas(ad.total) + ": factors " + with_commas(ad.lora);
  if (ad.magnitudes) total += ", DoRA magnitudes " + with_commas(ad.magnitudes);
  if (!ad.saved_modules.empty()) {
    total += ", whole modules saved beside them " + with_commas(ad.saved) + " (";
    for (size_t i = 0; i < ad.saved_modules.size() && i < 3; ++i)
      total += (i ? ", " : "") + std::string(a.model.weights[static_cast<size_t>(ad.saved_modules[i])].name);
    total += ad.saved_modules.size() > 3 ? ", ...)" : ")";
  }
  out << "  " << wrap(total + "; merged into its base it adds no parameters", 2, 4) << "\n";
  for (const std::string& n : ad.notes) out << "  note: " << wrap(n, 8, 4) << "\n";
  if (!ad.fit) return;
  const AdapterFit& f = *ad.fit;
  std::string base = "base " + f.base + ": " +
                     (f.base_parameters ? with_commas(*f.base_parameters) + " parameters; the adapter adds " +
                                              percent(ad.total, *f.base_parameters) + " of it while unmerged"
                                        : std::string("its count unknown (no family counts its config)")) +
                     "; an export of the merged model counts as the base" +
                     (ad.saved ? " (its modules saved whole in place of the base's)" : "") + "; " + std::to_string(f.fitted) + " of its " + std::to_string(ad.modules.size()) + " modules fit";
  out << "  " << wrap(base, 2, 4) << "\n";
  for (const std::string& m : f.misfits) out << "  does not fit: " << wrap(m, 16, 4) << "\n";
  for (const std::string& m : f.unchecked) out << "  not checked: " << wrap(m, 15, 4) << "\n";
}

void model_text(const Audit& a, const RenderOptions& options, std::ostream& out) {
  summary_text(a, out);
  // Runs of identical consecutive blocks, one row each (--all-blocks: one row per block).
  const std::vector<Fold> runs = block_folds(a.attention.blocks, options.all_blocks);
  bool told = false;  // the reader was told how to list every block
  if (!a.attention.blocks.empty()) {
    told = blocks_table(a.attention, runs, out);
    latent_text(a.attention, runs, out);
    projections_table(a.attention, runs, out);
  }
  unmatched_text(a, out);
  adapter_text(a, out);
  mixers_text(a, options.all_blocks, out);
  findings_text(a, options.all_blocks, told, out);
  declared_text(a, out);
  composition_text(a, out);
  unclaimed_text(a, options.top, out);
  experts_text(a, options.all_blocks, out);
  not_parameters_text(a, out);
  cost_text(a.cost, out);
  if (a.fidelity) {
    out << "\ndoes the export hold its checkpoint?\n";
    fidelity_text(*a.fidelity, options.all_blocks ? 0 : 10, out);
  }
  storage_text(a, out);
  largest_text(a, options.top, out);
}

void render_gates_text(const Run& run, const FileResult& f, std::ostream& out) {
  if (!run.gates_configured) return;
  if (f.gates.empty()) {
    out << "\ngates: all passed\n";
    return;
  }
  out << "\ngates: " << f.gates.size() << " failed\n";
  for (const auto& g : f.gates) {
    std::string head = "  " + visible(g.gate) + ":";
    out << head << " " << wrap(g.message, head.size() + 1, 4) << "\n";
  }
}

// The closing table of a text run over several models.
void render_summary(const Run& run, std::ostream& out) {
  out << "\nsummary of " << run.files.size() << " models\n";
  Table t;
  t.right = {false, true, true, true, true, false, false};
  t.rows.push_back({"model", "parameters", "stored", "attention", "blocks", "findings", "status"});
  for (const auto& f : run.files) {
    if (!f.audit) {
      t.rows.push_back({f.path, "-", "-", "-", "-", "-", "error"});
      continue;
    }
    const Audit& a = *f.audit;
    int counts[3] = {0, 0, 0};
    for (const auto& x : a.findings) ++counts[static_cast<int>(x.severity)];
    std::string findings = std::to_string(counts[2]) + "e " + std::to_string(counts[1]) + "w " + std::to_string(counts[0]) + "i";
    std::string status = !run.gates_configured ? "ok" : f.gates.empty() ? "gates passed" : std::to_string(f.gates.size()) + (f.gates.size() == 1 ? " gate failed" : " gates failed");
    t.rows.push_back({f.path, with_commas(a.framework.parameters), with_commas(a.inventory.stored), with_commas(a.attention.parameters),
                      std::to_string(a.attention.blocks.size()), findings, status});
  }
  t.print(out, "  ");
}

}  // namespace

void write_text(const Run& run, const RenderOptions& options, std::ostream& out) {
  auto model = [&](const FileResult& f, std::ostream& s) {
    if (!run.config.empty()) s << "config: " << visible(run.config) << "\n";
    model_text(*f.audit, options, s);
    render_gates_text(run, f, s);
  };
  bool first = true;
  auto section = [&](const FileResult& f, std::ostream& s) {
    if (f.audit) model(f, s);
  };
  for_each_section(run, options.jobs, section, [&](size_t i, const std::string* text) {
    if (!run.files[i].audit) return;
    if (!first) out << "\n";
    first = false;
    if (text) out << *text;
    else model(run.files[i], out);
  });
  if (run.files.size() > 1) render_summary(run, out);
}

}  // namespace headcount::renderers
