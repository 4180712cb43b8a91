// fold.h: runs of identical consecutive blocks (and expert layers, and findings that differ only
// by their block) folded into one row in the reports a person reads: text, markdown and html.
// A 32-layer model prints one row for its 32 equal blocks, not 32 rows that say the same thing.
// --all-blocks turns folding off; json, jsonl, sarif and github never fold (internal).
#pragma once

#include <cctype>
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headcount/results/attention.h"
#include "headcount/results/experts.h"
#include "headcount/results/findings.h"
#include "headcount/results/mixers.h"
#include "headcount/numbers.h"

namespace headcount::renderers {

// A run of two or more is folded: a pair already says "these two are the same" in one row,
// and one threshold keeps the reading rule simple (a row with a range stands for that many).
constexpr size_t kFoldFrom = 2;

// Consecutive entries (blocks or expert layers) shown as one row.
struct Fold {
  size_t first = 0;      // position of its first entry in the audit's vector
  size_t count = 1;      // entries it stands for
  int from = 0, to = 0;  // the first and last entry's index
  std::string name;      // the names as one pattern ("layers.N.self_attn"), else the first name
  bool folded() const { return count > 1; }
};

// "7", "0–31": a run's indices.
inline std::string index_range(int from, int to) {
  return from == to ? std::to_string(from) : std::to_string(from) + "–" + std::to_string(to);
}

// The "#" cell of a table row: "7", or "0–31 (32)" for a run of 32.
inline std::string fold_cell(const Fold& f) {
  return f.folded() ? index_range(f.from, f.to) + " (" + with_commas(f.count) + ")" : std::to_string(f.from);
}

// Names that differ only by one number ("layers.0.attn", "layers.1.attn") as one pattern with N
// in its place ("layers.N.attn"); any other difference keeps the first name. Names are split
// into runs of digits and runs of other characters, compared run by run.
inline std::string name_pattern(const std::vector<const std::string*>& names) {
  if (names.empty()) return std::string();
  auto split = [](const std::string& s) {
    std::vector<std::string_view> parts;
    size_t i = 0;
    while (i < s.size()) {
      size_t j = i;
      bool digit = std::isdigit(static_cast<unsigned char>(s[i])) != 0;
      while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) != 0) == digit) ++j;
      parts.push_back(std::string_view(s).substr(i, j - i));
      i = j;
    }
    return parts;
  };
  const std::string& first = *names[0];
  std::vector<std::string_view> base = split(first);
  std::vector<bool> differs(base.size(), false);
  for (size_t n = 1; n < names.size(); ++n) {
    std::vector<std::string_view> parts = split(*names[n]);
    if (parts.size() != base.size()) return first;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i] == base[i]) continue;
      bool digits = std::isdigit(static_cast<unsigned char>(parts[i][0])) && std::isdigit(static_cast<unsigned char>(base[i][0]));
      if (!digits) return first;
      differs[i] = true;
    }
  }
  size_t numbers = 0;
  for (bool d : differs) numbers += d;
  if (numbers != 1) return first;  // the same name throughout (numbers 0), or several numbers move
  std::string out;
  for (size_t i = 0; i < base.size(); ++i) out += differs[i] ? std::string("N") : std::string(base[i]);
  return out;
}

// Groups entries 0..n-1 into runs of consecutive indices with equal keys (what their rows print
// but the index and the name). Unfolded (`fold` false), each entry is its own run.
template <class Index, class Name, class Key>
std::vector<Fold> fold_runs(size_t n, bool fold, Index index, Name name, Key key) {
  std::vector<Fold> runs;
  std::string previous;
  size_t start = 0;
  auto close = [&](size_t end) {  // entries [start, end) as runs: one if long enough, else each alone
    size_t len = end - start;
    if (len >= kFoldFrom) {
      std::vector<const std::string*> names;
      names.reserve(len);
      for (size_t i = start; i < end; ++i) names.push_back(&name(i));
      runs.push_back({start, len, index(start), index(end - 1), name_pattern(names)});
    } else {
      for (size_t i = start; i < end; ++i) runs.push_back({i, 1, index(i), index(i), name(i)});
    }
  };
  for (size_t i = 0; i < n; ++i) {
    std::string k = fold ? key(i) : std::string();
    if (i > start && !(fold && k == previous && index(i) == index(i - 1) + 1)) {
      close(i);
      start = i;
    }
    previous = std::move(k);
  }
  if (n > 0) close(n);
  return runs;
}

namespace fold_detail {
inline void put(std::string& k, const std::string& s) {
  k += s;
  k += '\x1f';
}
inline void put(std::string& k, uint64_t v) { put(k, std::to_string(v)); }
inline void put(std::string& k, int64_t v) { put(k, std::to_string(v)); }
inline void put(std::string& k, const std::optional<int64_t>& v) { put(k, v ? std::to_string(*v) : std::string("?")); }
}  // namespace fold_detail

// What a block's rows and drawings show, but its index, its name and where its head count was
// read (node names): form, kind, heads, sizes, each projection (count, shape, packing, from an
// input), the extras, the total and the standard, the latent structure. The matcher's notes are
// left out: no person-read report prints them.
inline std::string block_key(const AttentionBlock& b) {
  using fold_detail::put;
  std::string k;
  put(k, b.form);
  put(k, b.kind);
  put(k, b.heads);
  put(k, b.kv_heads);
  put(k, b.width);
  put(k, b.head_dim);
  put(k, b.v_head_dim);
  put(k, b.k_head_dim);
  for (Role r : {Role::Q, Role::K, Role::V, Role::O}) {
    const Projection& p = b.projection(r);
    put(k, std::string(p.found ? "found" : "-") + (p.from_input.empty() ? "" : " input") +
               (p.weight_input.empty() ? "" : " weight input") + (p.bias_input.empty() ? "" : " bias input"));
    put(k, p.weight);
    put(k, p.bias);
    put(k, p.in_width);
    put(k, p.out_width);
    for (const auto& t : p.tensors) put(k, std::string(t.bias ? "b " : "w ") + std::to_string(t.elements) + " " + t.slice);
  }
  put(k, "extras");
  for (const auto& e : b.extras) put(k, std::string(extra_role_name(e.role)) + " " + std::to_string(e.elements));
  put(k, b.window);
  put(k, b.total);
  put(k, b.standard);
  put(k, std::string(b.has_bias ? "bias" : "no bias"));
  if (b.latent) {
    const LatentAttention& l = *b.latent;
    for (int64_t v : {l.q_rank, l.kv_rank, l.rope_dim, l.qk_nope_dim, l.v_head_dim}) put(k, v);
  }
  return k;
}

// The attention blocks as rows: runs of identical consecutive blocks folded unless `all`.
// `extra` (may be empty) adds a per-block number a report draws beside the block.
inline std::vector<Fold> block_folds(const std::vector<AttentionBlock>& blocks, bool all,
                                     const std::vector<uint64_t>& extra = {}) {
  return fold_runs(
      blocks.size(), !all, [&](size_t i) { return blocks[i].index; },
      [&](size_t i) -> const std::string& { return blocks[i].name; },
      [&](size_t i) { return block_key(blocks[i]) + (i < extra.size() ? std::to_string(extra[i]) : std::string()); });
}

// What a mixer's row and lines show, but its index and name.
inline std::vector<Fold> mixer_folds(const std::vector<Mixer>& mixers, bool all) {
  return fold_runs(
      mixers.size(), !all, [&](size_t i) { return mixers[i].index; },
      [&](size_t i) -> const std::string& { return mixers[i].name; },
      [&](size_t i) {
        using fold_detail::put;
        const Mixer& m = mixers[i];
        std::string k;
        put(k, std::string(mixer_kind_name(m.kind)));
        put(k, m.total);
        put(k, m.state_bytes ? std::to_string(*m.state_bytes) : std::string("?"));
        for (const auto& t : m.tensors) put(k, t.role + " " + std::to_string(t.elements));
        return k;
      });
}

// "linear attention", "state space (Mamba)": a mixer's kind in words.
inline std::string mixer_kind_words(MixerKind k) {
  return k == MixerKind::LinearAttention ? "linear attention" : k == MixerKind::StateSpace ? "state space" : "gated delta rule";
}

// What an expert layer's row and notes show, but its index and name.
inline std::vector<Fold> layer_folds(const std::vector<ExpertLayer>& layers, bool all) {
  return fold_runs(
      layers.size(), !all, [&](size_t i) { return layers[i].index; },
      [&](size_t i) -> const std::string& { return layers[i].name; },
      [&](size_t i) {
        using fold_detail::put;
        const ExpertLayer& l = layers[i];
        std::string k;
        put(k, l.form);
        put(k, l.experts);
        put(k, l.top_k);
        put(k, l.found);
        put(k, l.routed);
        put(k, l.expert ? std::to_string(*l.expert) : std::string("?"));
        put(k, l.router);
        put(k, l.shared);
        put(k, l.shared_experts);
        for (const auto& n : l.notes) put(k, n);
        return k;
      });
}

// Findings of one rule with the same words about several blocks, shown once, naming the blocks.
struct FindingFold {
  size_t first = 0;         // the first such finding (index into Audit::findings)
  std::vector<int> blocks;  // the blocks it is about, in order (empty: not about a block)
  bool folded() const { return blocks.size() > 1; }
};

// In order of each group's first finding. Unfolded (`all`), each finding is its own group.
inline std::vector<FindingFold> finding_folds(const std::vector<Finding>& findings, bool all) {
  std::vector<FindingFold> out;
  std::unordered_map<std::string, size_t> group;  // rule, severity and message -> position in out
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    if (!f.block) {
      out.push_back({i, {}});
      continue;
    }
    if (!all) {
      std::string key = f.rule + '\x1f' + severity_name(f.severity) + '\x1f' + f.message;
      auto [at, fresh] = group.try_emplace(std::move(key), out.size());
      if (!fresh) {
        std::vector<int>& blocks = out[at->second].blocks;
        blocks.push_back(*f.block);
        continue;
      }
    }
    out.push_back({i, {*f.block}});
  }
  for (auto& g : out) {  // the rules run block by block, so this only guards the order
    std::sort(g.blocks.begin(), g.blocks.end());
    g.blocks.erase(std::unique(g.blocks.begin(), g.blocks.end()), g.blocks.end());
  }
  return out;
}

// "7", "0–31", "0–4, 6–9": ascending indices with their runs as ranges.
inline std::string index_ranges(const std::vector<int>& indices) {
  std::string s;
  for (size_t i = 0; i < indices.size();) {
    size_t j = i;
    while (j + 1 < indices.size() && indices[j + 1] == indices[j] + 1) ++j;
    s += (i ? ", " : "") + index_range(indices[i], indices[j]);
    i = j + 1;
  }
  return s;
}

// "block 7", "each of blocks 0–31", "each of blocks 0–4, 6–9".
inline std::string blocks_text(const std::vector<int>& blocks) {
  if (blocks.size() == 1) return "block " + std::to_string(blocks[0]);
  return "each of blocks " + index_ranges(blocks);
}

}  // namespace headcount::renderers
