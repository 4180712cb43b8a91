// html.cpp: one self-contained HTML page for a run: inline CSS and SVG, no script, nothing
// fetched (a Content-Security-Policy forbids it). Every drawn size comes from the same numbers as
// the JSON report, and every segment carries its exact count in a <title> (shown on hover) and a
// data-count attribute. Colours are the Okabe-Ito palette, each paired with a pattern and a label,
// so the drawing survives greyscale printing and colour-blindness.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "fold.h"
#include "fidelity_rows.h"
#include "layout.h"
#include "renderers.h"
#include "headcount/version.h"

namespace headcount::renderers {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string share(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0%";
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << 100.0 * static_cast<double>(part) / static_cast<double>(whole) << "%";
  return s.str();
}

// Coordinates in SVG user units, with enough digits that a segment is placed within a pixel.
std::string num(double v) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(3);
  s << v;
  return s.str();
}

struct Part {
  const char* id;     // CSS class and pattern: "q", "ffn"
  std::string label;  // "attention Q"
  uint64_t count;
};

constexpr const char* kStyle = R"(
:root{--q:#0072B2;--k:#E69F00;--v:#009E73;--o:#CC79A7;--x:#56B4E9;--emb:#D55E00;--ffn:#F0E442;--exp:#999933;
--rt:#882255;--norm:#44AA99;--buf:#BBBBBB;--const:#DDDDDD;--lm:#AA4499;--mix:#117733;--other:#666666}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111;background:#fff;max-width:1100px;
margin:0 auto;padding:0 12px 40px}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:2px solid #111;padding-bottom:2px;word-break:break-all}
h3{font-size:1.05em;margin-top:1.6em}h4{font-size:1em;margin:1.2em 0 .3em}
.scroll{overflow-x:auto}table{border-collapse:collapse;margin:.4em 0}th,td{padding:2px 10px 2px 0;text-align:left;
vertical-align:top}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
p,li,figcaption,small,h2,h3,h4{overflow-wrap:anywhere}.layers{min-width:600px}
svg{display:block;width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:#111}
.swatch{display:inline-block;width:1.6em;height:1em;vertical-align:middle;border:1px solid #111;margin-right:.4em}
.error{color:#a00;font-weight:600}.sev-error{border-left:4px solid #a00}.sev-warning{border-left:4px solid #b60}
.sev-info{border-left:4px solid #06c}li.finding{padding-left:.5em;margin:.4em 0;list-style:none}
.facts{color:#333}.matrices{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-end}
.matrix{flex:0 1 auto;margin:0;max-width:100%}.matrix svg{width:auto;max-width:100%;height:auto}.matrix figcaption{font-size:.85em}
code{font-family:ui-monospace,monospace;font-size:.92em;word-break:break-all}
@media print{a{color:#111}}
)";

// One pattern per part: a fill colour and a line or dot texture that tells the parts apart
// without colour.
void patterns(std::ostream& out) {
  struct P {
    const char* id;
    const char* colour;
    const char* mark;
  };
  static const P kPatterns[] = {
      {"q", "var(--q)", ""},
      {"k", "var(--k)", "<path d='M0 6L6 0' stroke='#111' stroke-width='1'/>"},
      {"v", "var(--v)", "<circle cx='3' cy='3' r='1' fill='#111'/>"},
      {"o", "var(--o)", "<path d='M0 0L6 6' stroke='#111' stroke-width='1'/>"},
      {"x", "var(--x)", "<path d='M3 0V6' stroke='#111' stroke-width='1'/>"},
      {"emb", "var(--emb)", "<path d='M0 3H6' stroke='#111' stroke-width='1'/>"},
      {"ffn", "var(--ffn)", "<path d='M0 6L6 0M0 0L6 6' stroke='#111' stroke-width='.8'/>"},
      {"exp", "var(--exp)", "<rect x='2' y='2' width='2' height='2' fill='#111'/>"},
      {"rt", "var(--rt)", "<path d='M0 1H6M0 4H6' stroke='#fff' stroke-width='1'/>"},
      {"norm", "var(--norm)", "<path d='M1 0V6M4 0V6' stroke='#111' stroke-width='.8'/>"},
      {"buf", "var(--buf)", "<circle cx='1.5' cy='1.5' r='.8' fill='#111'/><circle cx='4.5' cy='4.5' r='.8' fill='#111'/>"},
      {"const", "var(--const)", "<circle cx='3' cy='3' r='.8' fill='#111'/>"},
      {"lm", "var(--lm)", "<path d='M0 3H6M3 0V6' stroke='#fff' stroke-width='.8'/>"},
      {"mix", "var(--mix)", "<path d='M0 0L6 6M0 6L6 0' stroke='#fff' stroke-width='.6'/>"},
      {"other", "var(--other)", "<path d='M0 6L6 0' stroke='#fff' stroke-width='1'/>"},
  };
  out << "<svg width='0' height='0' style='position:absolute' aria-hidden='true'><defs>";
  for (const auto& p : kPatterns) {
    out << "<pattern id='p-" << p.id << "' width='6' height='6' patternUnits='userSpaceOnUse'><rect width='6' height='6' fill='"
        << p.colour << "'/>" << p.mark << "</pattern>";
  }
  out << "</defs></svg>\n";
}

std::string swatch(const char* id) {
  return "<svg class='swatch' viewBox='0 0 12 8' aria-hidden='true'><rect width='12' height='8' fill='url(#p-" + std::string(id) +
         ")'/></svg>";
}

// The parts of the stored parameters, attention split by role when the roles add up to it (a
// tensor shared by blocks or roles would be drawn twice otherwise).
std::vector<Part> parts_of(const Audit& a) {
  const Composition& c = a.composition;
  uint64_t q = 0, k = 0, v = 0, o = 0, x = 0;
  for (const auto& b : a.attention.blocks) {
    q += b.q.total();
    k += b.k.total();
    v += b.v.total();
    o += b.o.total();
    for (const auto& e : b.extras) x += e.elements;
  }
  std::vector<Part> parts = {{"emb", "embeddings", c.embeddings}};
  if (q + k + v + o + x == c.attention) {
    parts.push_back({"q", "attention Q", q});
    parts.push_back({"k", "attention K", k});
    parts.push_back({"v", "attention V", v});
    parts.push_back({"o", "attention O", o});
    parts.push_back({"x", "attention extras", x});
  } else {
    parts.push_back({"q", "attention (Q/K/V/O and extras; tensors shared by blocks counted once)", c.attention});
  }
  parts.push_back({"ffn", "feed-forward", c.feed_forward});
  if (!a.experts.layers.empty()) {
    parts.push_back({"exp", "routed experts", c.routed_experts});
    parts.push_back({"rt", "routers", c.routers});
  }
  if (c.mixers) parts.push_back({"mix", "token mixers", c.mixers});
  if (c.lm_head) parts.push_back({"lm", "LM head", c.lm_head});
  parts.push_back({"norm", "norms", c.norms});
  parts.push_back({"buf", "buffers", c.buffers});
  if (c.constants) parts.push_back({"const", "scalar constants", c.constants});
  parts.push_back({"other", "everything else", c.other});
  return parts;
}

// A horizontal bar: one rect per part, widths in proportion to `whole`, in a 1000-unit-wide box.
void bar(std::ostream& out, const std::vector<Part>& parts, uint64_t whole, const std::string& what, double height = 28) {
  out << "<svg class='bar' viewBox='0 0 1000 " << num(height) << "' preserveAspectRatio='none' role='img' aria-label='"
      << esc(what) << "' data-total='" << whole << "'>";
  double x = 0;
  for (const auto& p : parts) {
    if (p.count == 0 || whole == 0) continue;
    double w = 1000.0 * static_cast<double>(p.count) / static_cast<double>(whole);
    out << "<rect class='seg seg-" << p.id << "' x='" << num(x) << "' y='0' width='" << num(w) << "' height='" << num(height)
        << "' fill='url(#p-" << p.id << ")' data-count='" << p.count << "'><title>" << esc(p.label) << ": "
        << count_of(p.count, "parameter", "parameters") << " (" << share(p.count, whole) << ")</title></rect>";
    x += w;
  }
  out << "</svg>\n";
}

// The token mixers beside the attention blocks: per run of identical mixers, its tensors by role
// drawn to scale (one bar each, class mixer), and its kind, state and evidence.
void mixers_section(std::ostream& out, const Audit& a, bool all_blocks) {
  const MixerResult& x = a.mixers;
  if (x.mixers.empty()) return;
  uint64_t widest = 1;
  for (const auto& mx : x.mixers) widest = std::max(widest, mx.total);
  out << "<h3>Token mixers</h3>\n<p>Layers that mix tokens without a Softmax over the context: each mixer's tensors "
         "by role " << swatch("mix") << ", to one scale; its state per sequence does not grow with the context.</p>\n";
  for (const auto& r : mixer_folds(x.mixers, all_blocks)) {
    const Mixer& mx = x.mixers[r.first];
    out << "<section class='mixer' data-first='" << r.from << "' data-last='" << r.to << "' data-blocks='" << r.count
        << "' data-parameters='" << mx.total << "'><h4>" << (r.folded() ? "mixers " : "mixer ") << index_range(r.from, r.to)
        << (r.folded() ? " (" + with_commas(r.count) + " identical)" : std::string()) << ": " << esc(r.name) << "</h4>\n";
    out << "<p class='facts'>" << (r.folded() ? "each: " : "") << esc(mixer_kind_words(mx.kind)) << "; "
        << count_of(mx.total, "parameter", "parameters") << "; state "
        << (mx.state_bytes ? with_commas(*mx.state_bytes) + " bytes per sequence" : std::string("unknown"))
        << ". <small>" << esc(mx.evidence) << "</small></p>\n";
    std::vector<Part> parts;
    for (const auto& t : mx.tensors) parts.push_back({"mix", t.role, t.elements});
    // Drawn to the widest mixer's scale: the bar's width is this mixer's share of it.
    double height = 22;
    out << "<svg class='mixer' viewBox='0 0 1000 " << num(height) << "' preserveAspectRatio='none' role='img' aria-label='"
        << esc(r.name) << " by role' data-total='" << mx.total << "' data-widest='" << widest << "'>";
    double xpos = 0;
    for (const auto& p : parts) {
      if (p.count == 0) continue;
      double w = 1000.0 * static_cast<double>(p.count) / static_cast<double>(widest);
      out << "<rect class='seg seg-mix' x='" << num(xpos) << "' y='0' width='" << num(w) << "' height='" << num(height)
          << "' fill='url(#p-mix)' stroke='#fff' data-count='" << p.count << "'><title>" << esc(p.label) << ": "
          << count_of(p.count, "parameter", "parameters") << "</title></rect>";
      xpos += w;
    }
    out << "</svg>\n</section>\n";
  }
}

// The feed-forward parameters that follow each block in the graph's order: a feed-forward tensor
// belongs to the last block whose attention core comes before the first node that reads it (in
// the same graph). Tensors before the first block, or in another graph, are left out.
std::vector<uint64_t> feed_forward_after(const Audit& a) {
  const Model& m = a.model;
  std::vector<uint64_t> ffn(a.attention.blocks.size(), 0);
  if (ffn.empty() || a.composition.part_of.size() != m.weights.size()) return ffn;
  std::vector<int64_t> position(m.nodes.size(), -1);
  for (const auto& g : m.graphs) {
    for (size_t i = 0; i < g.nodes.size(); ++i) position[static_cast<size_t>(g.nodes[i])] = static_cast<int64_t>(i);
  }
  // Per graph, the blocks' cores as (position, block), sorted: each tensor's owner is found by a
  // binary search, so a model of many layers costs no more than its size.
  std::map<int, std::vector<std::pair<int64_t, size_t>>> cores;
  for (size_t i = 0; i < a.attention.blocks.size(); ++i) {
    int core = a.attention.blocks[i].core_node;
    if (core >= 0) cores[m.nodes[static_cast<size_t>(core)].graph].push_back({position[static_cast<size_t>(core)], i});
  }
  for (auto& [g, list] : cores) std::sort(list.begin(), list.end());
  for (size_t w = 0; w < m.weights.size(); ++w) {
    if (a.composition.part_of[w] != headcount::Part::FeedForward || m.weights[w].consumers.empty()) continue;
    int first = m.weights[w].consumers[0];
    int64_t at = position[static_cast<size_t>(first)];
    for (int c : m.weights[w].consumers) at = std::min(at, position[static_cast<size_t>(c)]);
    auto list = cores.find(m.nodes[static_cast<size_t>(first)].graph);
    if (list == cores.end()) continue;
    // The last core placed before `at`.
    auto after = std::lower_bound(list->second.begin(), list->second.end(), std::make_pair(at, size_t{0}));
    if (after != list->second.begin()) ffn[std::prev(after)->second] += m.weights[w].elements;
  }
  return ffn;
}

// The blocks, one row each (a run of identical consecutive blocks: one row, labelled with its
// range and count), their Q/K/V/O, extras and the feed-forward after them to one scale: an odd
// layer stands out. Each row's segments are one block's counts, in a group that names the blocks
// it stands for (data-first, data-last, data-blocks).
void layers(std::ostream& out, const Audit& a, const std::string& anchor, const std::vector<uint64_t>& ffn,
            const std::vector<Fold>& runs) {
  uint64_t widest = 0;
  for (size_t i = 0; i < a.attention.blocks.size(); ++i) {
    uint64_t row = 0;
    if (add_overflows(a.attention.blocks[i].total, ffn[i], &row)) row = UINT64_MAX;
    widest = std::max(widest, row);
  }
  if (widest == 0) return;
  const double row = 22, label = 160, span = 1000 - label;
  out << "<div class='scroll'><svg class='layers' viewBox='0 0 1000 " << num(row * static_cast<double>(runs.size()))
      << "' role='img' aria-label='attention parameters per block' data-widest='" << widest << "'>";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Fold& r = runs[i];
    const AttentionBlock& b = a.attention.blocks[r.first];
    double y = row * static_cast<double>(i), x = label;
    std::string cell = fold_cell(r);
    size_t room = cell.size() < 16 ? 23 - cell.size() : 7;  // the label fits its 160 units
    out << "<g class='run' data-first='" << r.from << "' data-last='" << r.to << "' data-blocks='" << r.count << "'>"
        << "<a href='#" << anchor << "-block-" << r.from << "'><text x='0' y='" << num(y + 15) << "'>" << esc(cell) << " "
        << esc(r.name.size() > room ? r.name.substr(0, room - 1) + "…" : r.name) << "</text></a>";
    uint64_t extras = 0;
    for (const auto& e : b.extras) extras += e.elements;
    Part roles[] = {{"q", "Q", b.q.total()}, {"k", "K", b.k.total()}, {"v", "V", b.v.total()}, {"o", "O", b.o.total()},
                    {"x", "extras", extras}, {"ffn", "feed-forward after it", ffn[r.first]}};
    std::string who = r.folded() ? "each of blocks " + index_range(r.from, r.to) + " (" + with_commas(r.count) + "),"
                                 : "block " + std::to_string(r.from);
    for (const auto& p : roles) {
      if (p.count == 0) continue;
      double w = span * static_cast<double>(p.count) / static_cast<double>(widest);
      out << "<rect class='seg seg-" << p.id << "' x='" << num(x) << "' y='" << num(y + 3) << "' width='" << num(w)
          << "' height='16' fill='url(#p-" << p.id << ")' data-count='" << p.count << "'><title>" << who << " "
          << p.label << ": " << count_of(p.count, "parameter", "parameters") << "</title></rect>";
      x += w;
    }
    out << "</g>";
  }
  out << "</svg></div>\n";
}

// One projection matrix to scale (its input features down, its output features across), split
// into its heads: Q and K and V by output columns, O by input rows.
void matrix(std::ostream& out, const char* role, const char* id, const Projection& p, double scale, std::optional<int64_t> heads,
            std::optional<int64_t> per_head, bool rows) {
  if (!p.found || p.in_width <= 0 || p.out_width <= 0) return;
  double w = std::max(1.0, static_cast<double>(p.out_width) * scale), h = std::max(1.0, static_cast<double>(p.in_width) * scale);
  out << "<figure class='matrix'><svg width='" << num(w + 2) << "' height='" << num(h + 2) << "' viewBox='-1 -1 " << num(w + 2)
      << " " << num(h + 2) << "' role='img' aria-label='" << role << " " << p.in_width << " by " << p.out_width
      << "'><rect class='proj proj-" << id << "' x='0' y='0' width='" << num(w) << "' height='" << num(h) << "' fill='url(#p-"
      << id << ")' stroke='#111' stroke-width='1' data-in='" << p.in_width << "' data-out='" << p.out_width << "' data-count='"
      << p.total() << "'><title>" << role << ": " << p.in_width << " × " << p.out_width << ", "
      << count_of(p.total(), "parameter", "parameters") << "</title></rect>";
  int64_t span = rows ? p.in_width : p.out_width;
  if (heads && per_head && *heads > 1 && *per_head > 0 && *heads <= 512 && same(Int(*heads) * Int(*per_head), Int(span))) {
    for (int64_t i = 1; i < *heads; ++i) {
      double at = static_cast<double>(i * *per_head) * scale;
      if (rows) out << "<line x1='0' x2='" << num(w) << "' y1='" << num(at) << "' y2='" << num(at) << "' stroke='#fff' stroke-width='1'/>";
      else out << "<line y1='0' y2='" << num(h) << "' x1='" << num(at) << "' x2='" << num(at) << "' stroke='#fff' stroke-width='1'/>";
    }
  }
  out << "</svg><figcaption>" << role << " " << p.in_width << " × " << p.out_width;
  if (heads && per_head) out << ": " << count_of(static_cast<uint64_t>(*heads), "head", "heads") << " × " << *per_head;
  out << "</figcaption></figure>";
}

// A packed Q/K/V tensor drawn once, as stored, with each role's share marked: the roles whose
// weight share is a parsable column or row range of one 2-D tensor.
void packed(std::ostream& out, const Model& m, const AttentionBlock& b) {
  struct Range {
    const char* role;
    const char* id;
    bool rows;
    int64_t begin, end;
  };
  std::map<int, std::vector<Range>> by_weight;
  for (auto [role, id, p] : {std::tuple<const char*, const char*, const Projection*>{"Q", "q", &b.q}, {"K", "k", &b.k}, {"V", "v", &b.v}}) {
    for (const auto& t : p->tensors) {
      if (t.bias || t.slice.empty()) continue;
      long long from = 0, to = 0, of = 0;
      char axis[16] = {0};
      if (std::sscanf(t.slice.c_str(), "%15s %lld:%lld of %lld", axis, &from, &to, &of) != 4) continue;
      bool rows = std::string(axis) == "rows";
      if (!rows && std::string(axis) != "columns") continue;
      by_weight[t.weight].push_back({role, id, rows, from, to});
    }
  }
  for (const auto& [wi, ranges] : by_weight) {
    const Weight& w = m.weights[static_cast<size_t>(wi)];
    if (ranges.size() < 2 || w.dims.size() != 2 || w.dims[0] <= 0 || w.dims[1] <= 0) continue;
    int64_t r = w.dims[0], c = w.dims[1];
    double scale = 360.0 / static_cast<double>(std::max(r, c));
    double wd = std::max(1.0, static_cast<double>(c) * scale), ht = std::max(1.0, static_cast<double>(r) * scale);
    out << "<figure class='matrix packed'><svg width='" << num(wd + 2) << "' height='" << num(ht + 2) << "' viewBox='-1 -1 "
        << num(wd + 2) << " " << num(ht + 2) << "' role='img' aria-label='packed tensor " << esc(std::string(w.name)) << "'>";
    std::string caption;
    for (const auto& x : ranges) {
      int64_t span = x.rows ? r : c;
      if (x.begin < 0 || x.end > span || x.begin >= x.end) continue;
      double from = static_cast<double>(x.begin) * scale, len = static_cast<double>(x.end - x.begin) * scale;
      out << "<rect class='share share-" << x.id << "' x='" << num(x.rows ? 0 : from) << "' y='" << num(x.rows ? from : 0)
          << "' width='" << num(x.rows ? wd : len) << "' height='" << num(x.rows ? len : ht) << "' fill='url(#p-" << x.id
          << ")'><title>" << x.role << ": " << (x.rows ? "rows " : "columns ") << x.begin << ":" << x.end << " of "
          << span << "</title></rect>";
      caption += std::string(caption.empty() ? "" : ", ") + x.role + " " + std::to_string(x.begin) + ":" + std::to_string(x.end);
    }
    out << "<rect x='0' y='0' width='" << num(wd) << "' height='" << num(ht) << "' fill='none' stroke='#111'/></svg>"
        << "<figcaption>one stored tensor <code>" << esc(std::string(w.name)) << "</code> [" << r << ", " << c << "], "
        << (ranges[0].rows ? "rows" : "columns") << " " << esc(caption) << "</figcaption></figure>";
  }
}

// The run of blocks holding block `index` (runs are in index order).
const Fold& run_of(const std::vector<Fold>& runs, int index) {
  auto after = std::upper_bound(runs.begin(), runs.end(), index, [](int i, const Fold& r) { return i < r.from; });
  return after == runs.begin() ? runs.front() : *std::prev(after);
}

// One block, or a run of identical consecutive blocks drawn once: its facts, its projections to
// scale, and links to its findings (`mine`: positions in `findings`).
void block_section(std::ostream& out, const Audit& a, const Fold& r, const std::vector<FindingFold>& findings,
                   const std::vector<size_t>& mine, const std::string& anchor) {
  const AttentionBlock& b = a.attention.blocks[r.first];
  out << "<section class='block' id='" << anchor << "-block-" << r.from << "' data-first='" << r.from << "' data-last='"
      << r.to << "' data-blocks='" << r.count << "'><h4>";
  if (r.folded()) out << "blocks " << index_range(r.from, r.to) << " (" << with_commas(r.count) << " identical): ";
  else out << "block " << r.from << ": ";
  out << esc(r.name) << "</h4>\n<p class='facts'>" << (r.folded() ? "each: " : "") << esc(b.form) << ", " << esc(b.kind)
      << "-attention; heads " << (b.heads ? std::to_string(*b.heads) : "unknown");
  if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) out << " (" << *b.kv_heads << " K/V)";
  out << ", width " << (b.width > 0 ? std::to_string(b.width) : "unknown");
  if (b.window) out << ", a sliding window of " << count_of(static_cast<uint64_t>(*b.window), "token", "tokens");
  out << "; " << count_of(b.total, "parameter", "parameters");
  if (b.standard) out << " (" << share(b.total, b.standard) << " of the standard " << with_commas(b.standard) << ")";
  out << ". <small>" << (r.folded() ? "block " + std::to_string(r.from) + ": " : std::string()) << esc(b.heads_from)
      << "</small></p>\n";
  int64_t largest = 1;
  for (Role role : {Role::Q, Role::K, Role::V, Role::O}) {
    largest = std::max({largest, b.projection(role).in_width, b.projection(role).out_width});
  }
  double scale = 240.0 / static_cast<double>(largest);
  std::optional<int64_t> kv = b.kv_heads ? b.kv_heads : b.heads;
  std::optional<int64_t> dk = b.k_head_dim ? b.k_head_dim : b.head_dim;
  out << "<div class='matrices'>";
  matrix(out, "Q", "q", b.q, scale, b.heads, b.head_dim, false);
  matrix(out, "K", "k", b.k, scale, kv, dk, false);
  matrix(out, "V", "v", b.v, scale, kv, b.v_head_dim, false);
  matrix(out, "O", "o", b.o, scale, b.heads, b.v_head_dim, true);
  packed(out, a.model, b);
  out << "</div>\n";
  if (b.latent) {
    out << "<p class='facts'>multi-head latent attention" << (r.folded() ? " (block " + std::to_string(r.from) + ")" : "")
        << ": " << esc(b.latent->from) << "</p>\n";
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    const FindingFold& g = findings[mine[i]];
    out << (i ? ", " : "<p>findings: ") << "<a href='#" << anchor << "-finding-" << g.first << "'>"
        << esc(a.findings[g.first].rule) << "</a>";
  }
  if (!mine.empty()) out << "</p>\n";
  out << "</section>\n";
}

// The model's totals, its findings by severity and its gates.
void summary_table(std::ostream& out, const FileResult& f, const Audit& a, bool gates_configured) {
  int counts[3] = {0, 0, 0};
  for (const auto& x : a.findings) ++counts[static_cast<int>(x.severity)];
  out << "<div class='scroll'><table class='summary'>";
  auto row = [&](const std::string& k, const std::string& v) { out << "<tr><th>" << k << "</th><td class='n'>" << v << "</td></tr>"; };
  row("parameters (as the framework counts them)", with_commas(a.framework.parameters));
  row("stored", with_commas(a.inventory.stored));
  row("unique (duplicate copies removed)", with_commas(a.unique));
  row("attention", with_commas(a.attention.parameters));
  if (a.active_parameters) row("active per token (experts)", with_commas(*a.active_parameters));
  row("attention blocks", std::to_string(a.attention.blocks.size()));
  row("heads", esc(heads_summary(a)));
  row("findings", count_of(static_cast<uint64_t>(counts[2]), "error", "errors") + ", " +
                      count_of(static_cast<uint64_t>(counts[1]), "warning", "warnings") + ", " +
                      with_commas(static_cast<uint64_t>(counts[0])) + " info");
  if (gates_configured) row("gates", f.gates.empty() ? "passed" : std::to_string(f.gates.size()) + " failed");
  out << "</table></div>\n";
  for (const auto& g : f.gates) out << "<p class='error'>gate " << esc(g.gate) << ": " << esc(g.message) << "</p>\n";
}

void fidelity_table(std::ostream& out, const Fidelity& fidelity, bool all_blocks) {
  out << "<h3>Does the export hold its checkpoint?</h3><div class='scroll'><table>";
  for (const auto& r : fidelity_rows(fidelity, all_blocks ? 0 : 10)) {
    out << "<tr><th>" << esc(r.label) << "</th><td>" << esc(r.text) << "</td></tr>";
  }
  out << "</table></div>\n";
}

void parts_table(std::ostream& out, const Audit& a) {
  out << "<h3>Where the parameters are</h3>\n";
  std::vector<Part> parts = parts_of(a);
  bar(out, parts, a.inventory.stored, "the stored parameters by part");
  out << "<div class='scroll'><table class='parts'><tr><th>part</th><th class='n'>parameters</th><th class='n'>share</th></tr>";
  for (const auto& p : parts) {
    out << "<tr><td>" << swatch(p.id) << esc(p.label) << "</td><td class='n'>" << with_commas(p.count) << "</td><td class='n'>"
        << share(p.count, a.inventory.stored) << "</td></tr>";
  }
  out << "</table></div>\n";
}

void cost_table(std::ostream& out, const Cost& c) {
  out << "<h3>Inference cost</h3>\n<div class='scroll'><table class='cost'>";
  auto crow = [&](const std::string& k, const std::string& v) { out << "<tr><th>" << k << "</th><td class='n'>" << v << "</td></tr>"; };
  std::string bound = c.kv_lower_bound ? "at least " : "";
  crow("K/V cache per token", bound + with_commas(c.kv_bytes_per_token) + " bytes");
  if (c.kv_bytes_at_context) {
    crow("K/V cache at " + with_commas(c.context) + " tokens, batch " + with_commas(c.batch),
         bound + with_commas(*c.kv_bytes_at_context) + " bytes");
  }
  if (c.cross_kv_bytes_per_encoder_token) crow("cross-attention K/V per encoder token", with_commas(c.cross_kv_bytes_per_encoder_token) + " bytes");
  if (c.state_bytes || c.state_lower_bound) {
    crow("recurrent state per sequence (token mixers)", (c.state_lower_bound ? "at least " : "") + with_commas(c.state_bytes) + " bytes");
  }
  crow("MACs per token at " + with_commas(c.context) + " tokens", (c.macs_lower_bound ? "at least " : "") + with_commas(c.macs_per_token));
  if (c.prefill_macs) crow("prefill of " + with_commas(c.context) + " tokens", with_commas(*c.prefill_macs) + " MACs");
  out << "</table></div>\n";
  if (!c.notes.empty()) {
    out << "<ul>";
    for (const auto& n : c.notes) out << "<li>" << esc(n) << "</li>";
    out << "</ul>\n";
  }
}

void blocks_sections(std::ostream& out, const Audit& a, const std::string& anchor, const std::vector<uint64_t>& ffn,
                     const std::vector<Fold>& runs, const std::vector<FindingFold>& findings) {
  out << "<h3>Attention, block by block</h3>\n<p>Q " << swatch("q") << " K " << swatch("k") << " V " << swatch("v") << " O "
      << swatch("o") << " extras " << swatch("x") << " feed-forward after the block " << swatch("ffn")
      << " to one scale.</p>\n";
  layers(out, a, anchor, ffn, runs);
  out << "<h3>Blocks</h3>\n<p>Each projection drawn to scale, input features down and output features across, split "
         "into its heads.";
  if (std::any_of(runs.begin(), runs.end(), [](const Fold& r) { return r.folded(); })) {
    out << " A run of identical consecutive blocks is drawn once, with its range and count; <code>--all-blocks</code> "
           "draws every block.";
  }
  out << "</p>\n";
  // Each run's findings, found once per block a finding names (not per run and finding).
  std::vector<std::vector<size_t>> mine(runs.size());
  for (size_t gi = 0; gi < findings.size(); ++gi) {
    for (int block : findings[gi].blocks) {
      auto& list = mine[static_cast<size_t>(&run_of(runs, block) - runs.data())];
      if (list.empty() || list.back() != gi) list.push_back(gi);
    }
  }
  for (size_t i = 0; i < runs.size(); ++i) block_section(out, a, runs[i], findings, mine[i], anchor);
}

void findings_list(std::ostream& out, const Audit& a, const std::string& anchor, const std::vector<Fold>& runs,
                   const std::vector<FindingFold>& findings) {
  out << "<h3>Findings</h3>\n<ol>";
  for (const auto& g : findings) {
    const Finding& x = a.findings[g.first];
    out << "<li class='finding sev-" << severity_name(x.severity) << "' id='" << anchor << "-finding-" << g.first
        << "' data-blocks='" << g.blocks.size() << "'><strong>" << severity_name(x.severity) << "</strong> <code>"
        << esc(x.rule) << "</code>";
    if (!g.blocks.empty() && !runs.empty()) {
      out << " <a href='#" << anchor << "-block-" << run_of(runs, g.blocks[0]).from << "'>" << blocks_text(g.blocks) << "</a>";
    }
    out << ": " << esc(x.message) << "</li>";
  }
  out << "</ol>\n";
}

void model_section(std::ostream& out, const FileResult& f, size_t index, bool gates_configured, bool all_blocks) {
  std::string anchor = "m" + std::to_string(index);
  out << "<section class='model' id='" << anchor << "'><h2>" << esc(f.path) << "</h2>\n";
  if (!f.audit) {
    out << "<p class='error'>headcount: error: " << esc(f.path) << ": " << esc(f.error) << "</p></section>\n";
    return;
  }
  const Audit& a = *f.audit;
  summary_table(out, f, a, gates_configured);
  if (a.fidelity) fidelity_table(out, *a.fidelity, all_blocks);
  parts_table(out, a);
  cost_table(out, a.cost);
  // Runs of identical consecutive blocks, drawn once each (--all-blocks: every block), and the
  // findings that differ only by their block, listed once.
  const std::vector<uint64_t> ffn = feed_forward_after(a);
  const std::vector<Fold> runs = block_folds(a.attention.blocks, all_blocks, ffn);
  const std::vector<FindingFold> findings = finding_folds(a.findings, all_blocks);
  if (!a.attention.blocks.empty()) blocks_sections(out, a, anchor, ffn, runs, findings);
  mixers_section(out, a, all_blocks);
  if (!a.findings.empty()) findings_list(out, a, anchor, runs, findings);
  out << "</section>\n";
}

void head(std::ostream& out, const std::string& title) {
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
         "<meta name='viewport' content='width=device-width, initial-scale=1'>"
         "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
         "<title>"
      << esc(title) << "</title><style>" << kStyle << "</style></head><body>\n";
  patterns(out);
}

}  // namespace

void write_diff_html(const Diff& d, std::ostream& out) {
  head(out, "headcount diff");
  out << "<h1>headcount diff</h1>\n<p class='outcome'><strong>" << esc(d.outcome) << "</strong></p>\n";
  // Both models to one scale: the larger stored count fills the width.
  uint64_t whole = 0;
  for (const DiffSide* s : {&d.a, &d.b}) whole = std::max<uint64_t>(whole, s->stored.value_or(0));
  for (const auto& [label, s] : {std::pair<const char*, const DiffSide*>{"A", &d.a}, {"B", &d.b}}) {
    out << "<h3>" << label << ": " << esc(s->path) << "</h3>\n";
    if (s->audit && whole) {
      std::vector<Part> parts = parts_of(*s->audit);
      bar(out, parts, whole, std::string(label) + ": the stored parameters by part, to the larger model's scale");
    } else {
      out << "<p>a baseline report: " << (s->stored ? with_commas(*s->stored) + " stored parameters" : std::string()) << "</p>\n";
    }
  }
  out << "<div class='scroll'><table class='totals'><tr><th></th><th class='n'>A</th><th class='n'>B</th><th class='n'>change</th></tr>";
  for (const auto& c : d.totals) {
    out << "<tr><th>" << esc(c.what) << "</th><td class='n'>" << esc(c.a) << "</td><td class='n'>" << esc(c.b) << "</td><td class='n'>"
        << change_text(c) << "</td></tr>";
  }
  out << "</table></div>\n";
  for (const auto& b : d.blocks) {
    out << "<h4>block " << b.index << "</h4><div class='scroll'><table>";
    for (const auto& c : b.changes) {
      out << "<tr><th>" << esc(c.what) << "</th><td class='n'>" << esc(c.a) << "</td><td>→</td><td class='n'>" << esc(c.b) << "</td></tr>";
    }
    out << "</table></div>\n";
  }
  if (!d.findings_added.empty() || !d.findings_removed.empty()) {
    out << "<h3>Findings</h3><ul>";
    for (const auto& f : d.findings_added) out << "<li>+ " << esc(f) << "</li>";
    for (const auto& f : d.findings_removed) out << "<li>− " << esc(f) << "</li>";
    out << "</ul>\n";
  }
  if (d.fidelity) {
    out << "<h3>Does the export hold its checkpoint?</h3><div class='scroll'><table>";
    for (const auto& r : fidelity_rows(*d.fidelity, 0)) out << "<tr><th>" << esc(r.label) << "</th><td>" << esc(r.text) << "</td></tr>";
    out << "</table></div>\n";
  }
  out << "</body></html>\n";
}

void write_html(const Run& run, const RenderOptions& options, std::ostream& out) {
  head(out, "headcount " + (run.files.size() == 1 ? run.files[0].path : std::to_string(run.files.size()) + " models"));
  out << "<h1>headcount " << kVersion << "</h1>\n";
  if (run.files.size() > 1) {
    out << "<div class='scroll'><table class='runs'><tr><th>model</th><th class='n'>parameters</th><th class='n'>attention</th>"
           "<th class='n'>blocks</th></tr>";
    for (size_t i = 0; i < run.files.size(); ++i) {
      const FileResult& f = run.files[i];
      out << "<tr><td><a href='#m" << i << "'>" << esc(f.path) << "</a></td>";
      if (f.audit) {
        out << "<td class='n'>" << with_commas(f.audit->framework.parameters) << "</td><td class='n'>"
            << with_commas(f.audit->attention.parameters) << "</td><td class='n'>" << f.audit->attention.blocks.size() << "</td>";
      } else {
        out << "<td colspan='3' class='error'>error: " << esc(f.error) << "</td>";
      }
      out << "</tr>";
    }
    out << "</table></div>\n";
  }
  for (size_t i = 0; i < run.files.size(); ++i) model_section(out, run.files[i], i, run.gates_configured, options.all_blocks);
  out << "</body></html>\n";
}

}  // namespace headcount::renderers
