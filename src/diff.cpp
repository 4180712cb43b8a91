// diff.cpp: two models compared (see headcount/diff.h).
#include "headcount/diff.h"

#include <algorithm>
#include <map>
#include <set>

#include "headcount/checked.h"
#include "headcount/numbers.h"

namespace headcount {

namespace {

std::optional<std::pair<int64_t, int64_t>> shape_of(const Projection& p) {
  if (!p.found || p.in_width <= 0 || p.out_width <= 0) return std::nullopt;
  return std::make_pair(p.in_width, p.out_width);
}

std::string show(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }
std::string show_count(const std::optional<uint64_t>& v) { return v ? with_commas(*v) : "?"; }
std::string show_shape(const std::optional<std::pair<int64_t, int64_t>>& s) {
  return s ? std::to_string(s->first) + " × " + std::to_string(s->second) : "?";
}

std::optional<int64_t> delta(const std::optional<uint64_t>& a, const std::optional<uint64_t>& b) {
  if (!a || !b || *a > static_cast<uint64_t>(INT64_MAX) || *b > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(*b) - static_cast<int64_t>(*a);
}


std::string percent_change(uint64_t a, int64_t d) {
  if (a == 0) return "";
  double p = 100.0 * static_cast<double>(d) / static_cast<double>(a);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", p);
  std::string s = buf;
  if (s[0] == '-') s = "−" + s.substr(1);
  return s;
}

// The distinct values of one field over a side's blocks, as "12" or "4, 8".
std::string values(const DiffSide& s, std::optional<int64_t> DiffBlock::*field) {
  std::set<int64_t> seen;
  bool unknown = false;
  for (const auto& b : s.blocks) {
    if (b.*field) seen.insert(*(b.*field));
    else unknown = true;
  }
  std::string out;
  for (int64_t v : seen) out += (out.empty() ? "" : ", ") + std::to_string(v);
  if (unknown) out += out.empty() ? "?" : ", ?";
  return out.empty() ? "none" : out;
}

}  // namespace

std::string signed_count(int64_t d) {
  uint64_t magnitude = d < 0 ? 0 - static_cast<uint64_t>(d) : static_cast<uint64_t>(d);  // INT64_MIN too
  return (d > 0 ? "+" : d < 0 ? "−" : "") + with_commas(magnitude);
}

std::string change_text(const Change& c) {
  if (!c.delta) return "";
  return *c.delta == 0 ? "unchanged" : signed_count(*c.delta);
}

DiffSide diff_side(const std::string& path, const Audit& a) {
  DiffSide s;
  s.path = path;
  s.audit = &a;
  s.framework = a.framework.parameters;
  s.stored = a.inventory.stored;
  s.attention = a.attention.parameters;
  for (const auto& b : a.attention.blocks) {
    DiffBlock d;
    d.heads = b.heads;
    d.kv_heads = b.kv_heads;
    if (b.width > 0) d.width = b.width;
    d.head_dim = b.head_dim;
    d.v_head_dim = b.v_head_dim;
    d.q = b.q.total();
    d.k = b.k.total();
    d.v = b.v.total();
    d.o = b.o.total();
    uint64_t extras = 0;
    for (const auto& e : b.extras) extras += e.elements;
    d.extras = extras;
    d.total = b.total;
    d.q_shape = shape_of(b.q);
    d.k_shape = shape_of(b.k);
    d.v_shape = shape_of(b.v);
    d.o_shape = shape_of(b.o);
    d.form = b.form;
    s.blocks.push_back(d);
  }
  for (const auto& f : a.findings) s.findings.push_back(f.rule + (f.block ? " (block " + std::to_string(*f.block) + ")" : ""));
  return s;
}

DiffSide diff_side(const std::string& path, const BaselineModel& m) {
  DiffSide s;
  s.path = path;
  s.framework = m.framework;
  s.stored = m.stored;
  s.attention = m.attention;
  for (const auto& b : m.blocks) {
    DiffBlock d;
    d.heads = b.heads;
    d.kv_heads = b.kv_heads;
    d.width = b.width;
    d.form = b.form;
    s.blocks.push_back(d);
  }
  return s;
}

namespace {

using RoleGrowth = std::map<std::string, int64_t>;  // Q/K/V/O: summed change over blocks present on both sides

void compare_totals(const DiffSide& a, const DiffSide& b, Diff& d) {
  auto total = [&](const char* what, const std::optional<uint64_t>& x, const std::optional<uint64_t>& y) {
    Change c{what, show_count(x), show_count(y), delta(x, y)};
    if (x && y && *x != *y) d.counts_changed = true;
    d.totals.push_back(c);
  };
  total("parameters", a.framework, b.framework);
  total("stored", a.stored, b.stored);
  total("attention", a.attention, b.attention);
  d.totals.push_back({"blocks", std::to_string(a.blocks.size()), std::to_string(b.blocks.size()),
                      static_cast<int64_t>(b.blocks.size()) - static_cast<int64_t>(a.blocks.size())});
  if (a.blocks.size() != b.blocks.size()) d.counts_changed = true;
}

// The changes of one block present on both sides: its sizes, counts (with their shapes) and form.
void compare_block(const DiffBlock& x, const DiffBlock& y, BlockChanges& bc, Diff& d, RoleGrowth& role_growth) {
  auto field = [&](const char* what, const std::optional<int64_t>& p, const std::optional<int64_t>& q) {
    if (p && q && *p != *q) bc.changes.push_back({what, show(p), show(q), (Int(*q) - Int(*p)).opt()});
  };
  field("heads", x.heads, y.heads);
  field("kv_heads", x.kv_heads, y.kv_heads);
  field("width", x.width, y.width);
  field("head_dim", x.head_dim, y.head_dim);
  field("v_head_dim", x.v_head_dim, y.v_head_dim);
  auto count = [&](const char* what, const std::optional<uint64_t>& p, const std::optional<uint64_t>& q,
                   const std::optional<std::pair<int64_t, int64_t>>& ps, const std::optional<std::pair<int64_t, int64_t>>& qs) {
    if (!p || !q) return;
    if (*p != *q) {
      auto dd = delta(p, q);
      Change c{what, with_commas(*p) + (ps ? " (" + show_shape(ps) + ")" : ""), with_commas(*q) + (qs ? " (" + show_shape(qs) + ")" : ""), dd};
      bc.changes.push_back(c);
      if (dd) role_growth[what] = (Int(role_growth[what]) + Int(*dd)).value_or(0);
      d.counts_changed = true;
    } else if (ps && qs && *ps != *qs) {
      bc.changes.push_back({std::string(what) + " shape", show_shape(ps), show_shape(qs), {}});
    }
  };
  count("Q", x.q, y.q, x.q_shape, y.q_shape);
  count("K", x.k, y.k, x.k_shape, y.k_shape);
  count("V", x.v, y.v, x.v_shape, y.v_shape);
  count("O", x.o, y.o, x.o_shape, y.o_shape);
  count("extras", x.extras, y.extras, std::nullopt, std::nullopt);
  if (x.form != y.form && !x.form.empty() && !y.form.empty()) bc.changes.push_back({"form", x.form, y.form, {}});
}

void compare_blocks(const DiffSide& a, const DiffSide& b, Diff& d, RoleGrowth& role_growth) {
  size_t n = std::max(a.blocks.size(), b.blocks.size());
  for (size_t i = 0; i < n; ++i) {
    BlockChanges bc;
    bc.index = static_cast<int>(i);
    if (i >= a.blocks.size() || i >= b.blocks.size()) {
      bc.changes.push_back({"block", i < a.blocks.size() ? "present" : "absent", i < b.blocks.size() ? "present" : "absent", {}});
      d.blocks.push_back(bc);
      continue;
    }
    compare_block(a.blocks[i], b.blocks[i], bc, d, role_growth);
    if (!bc.changes.empty()) d.blocks.push_back(bc);
  }
}

// Findings only between two audits: a baseline report does not record them.
void compare_findings(const DiffSide& a, const DiffSide& b, Diff& d) {
  std::multiset<std::string> fa(a.findings.begin(), a.findings.end()), fb(b.findings.begin(), b.findings.end());
  for (const auto& f : std::set<std::string>(fb.begin(), fb.end())) {
    if (a.audit && b.audit && fb.count(f) > fa.count(f)) d.findings_added.push_back(f);
  }
  for (const auto& f : std::set<std::string>(fa.begin(), fa.end())) {
    if (a.audit && b.audit && fa.count(f) > fb.count(f)) d.findings_removed.push_back(f);
  }
}

// Why an unchanged attention count is unchanged: every projection keeps its shape (one shape: named).
std::string why_unchanged(const DiffSide& a, const DiffSide& b) {
  std::set<std::pair<int64_t, int64_t>> shapes;
  bool all = !a.blocks.empty() && a.blocks.size() == b.blocks.size();
  for (size_t i = 0; all && i < a.blocks.size(); ++i) {
    for (auto m : {&DiffBlock::q_shape, &DiffBlock::k_shape, &DiffBlock::v_shape, &DiffBlock::o_shape}) {
      const auto& s1 = a.blocks[i].*m;
      const auto& s2 = b.blocks[i].*m;
      if (!s1 || !s2 || *s1 != *s2) all = false;
      else shapes.insert(*s1);
    }
  }
  if (all && shapes.size() == 1) return " (each projection is still " + show_shape(*shapes.begin()) + ")";
  if (all) return " (every projection keeps its size)";
  return "";
}

// A changed attention count, and which of Q/K/V/O grew or shrank.
std::string attention_changed(const DiffSide& a, const DiffSide& b, const RoleGrowth& role_growth) {
  auto ad = delta(a.attention, b.attention);
  std::string s = "attention parameters " + with_commas(*a.attention) + " → " + with_commas(*b.attention) +
                  (ad ? " (" + signed_count(*ad) + ", " + percent_change(*a.attention, *ad) + ")" : std::string());
  std::vector<std::string> grew;
  for (const char* r : {"Q", "K", "V", "O", "extras"}) {
    auto it = role_growth.find(r);
    if (it != role_growth.end() && it->second != 0) {
      grew.push_back(std::string(r) + (it->second > 0 ? " grew by " : " shrank by ") +
                     with_commas(static_cast<uint64_t>(it->second > 0 ? it->second : -it->second)));
    }
  }
  if (!grew.empty()) {
    s += ": ";
    for (size_t i = 0; i < grew.size(); ++i) s += (i ? ", " : "") + grew[i];
  }
  return s;
}

// The outcome, plainly: heads first, then what happened to the attention count and why.
std::string outcome_sentence(const DiffSide& a, const DiffSide& b, const RoleGrowth& role_growth) {
  std::vector<std::string> parts;
  std::string ha = values(a, &DiffBlock::heads), hb = values(b, &DiffBlock::heads);
  if (ha != hb) parts.push_back("heads " + ha + " → " + hb);
  std::string ka = values(a, &DiffBlock::kv_heads), kb = values(b, &DiffBlock::kv_heads);
  if (ka != kb && (ka != ha || kb != hb)) parts.push_back("K/V heads " + ka + " → " + kb);  // only with grouped K/V
  if (a.attention && b.attention) {
    if (*a.attention == *b.attention) {
      parts.push_back("attention parameters unchanged" + why_unchanged(a, b));
    } else {
      parts.push_back(attention_changed(a, b, role_growth));
    }
  }
  if (a.framework && b.framework && *a.framework != *b.framework) {
    auto fd = delta(a.framework, b.framework);
    parts.push_back("parameters " + with_commas(*a.framework) + " → " + with_commas(*b.framework) +
                    (fd ? " (" + signed_count(*fd) + ", " + percent_change(*a.framework, *fd) + ")" : std::string()));
  } else if (a.framework && b.framework) {
    parts.push_back("parameters unchanged (" + with_commas(*a.framework) + ")");
  }
  if (a.blocks.size() != b.blocks.size()) {
    parts.push_back("attention blocks " + std::to_string(a.blocks.size()) + " → " + std::to_string(b.blocks.size()));
  }
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
  return text;
}

}  // namespace

Diff compare_sides(DiffSide a, DiffSide b) {
  Diff d;
  RoleGrowth role_growth;
  compare_totals(a, b, d);
  compare_blocks(a, b, d, role_growth);
  compare_findings(a, b, d);
  d.outcome = outcome_sentence(a, b, role_growth);
  d.a = std::move(a);
  d.b = std::move(b);
  return d;
}

}  // namespace headcount
