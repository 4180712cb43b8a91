// gate.cpp: budgets, expected heads, severity gates and baseline comparison.
#include "headcount/gate.h"

#include <fnmatch.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "headcount/error.h"
#include "headcount/numbers.h"
#include "headcount/report.h"

namespace headcount {
namespace {

// Parses "1.5" times `unit` exactly, without floating point: "1.5" x 1,000,000,000. A fraction
// of a whole unit is refused unless `round_down` ("476.8MiB" is 499,961,036.8 bytes: 499,961,036).
std::optional<uint64_t> scaled(const std::string& number, uint64_t unit, bool round_down = false) {
  if (number.empty()) return std::nullopt;
  uint64_t whole = 0, frac = 0, frac_scale = 1;
  bool dot = false, digits = false;
  for (char c : number) {
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    digits = true;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (!dot) {
      if (mul_overflows(whole, 10, &whole) || add_overflows(whole, d, &whole)) return std::nullopt;
    } else {
      if (frac_scale > 1000000000000ull) return std::nullopt;
      frac = frac * 10 + d;
      frac_scale *= 10;
    }
  }
  if (!digits) return std::nullopt;
  uint64_t a = 0, b = 0;
  if (mul_overflows(whole, unit, &a) || mul_overflows(frac, unit, &b)) return std::nullopt;
  if (b % frac_scale != 0 && !round_down) return std::nullopt;  // "1.5" of a plain count is not a whole number
  uint64_t out = 0;
  if (add_overflows(a, b / frac_scale, &out)) return std::nullopt;
  return out;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string pct(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", x * 100.0);
  return buf;
}

std::string diff_of(uint64_t now, uint64_t before) {
  if (now >= before) return "+" + with_commas(now - before);
  return "-" + with_commas(before - now);
}

double number_of(const google::protobuf::Value& v) { return v.kind_case() == google::protobuf::Value::kNumberValue ? v.number_value() : 0.0; }

const google::protobuf::Value* field(const google::protobuf::Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

BaselineModel model_from(const google::protobuf::Struct& doc, const std::string& path) {
  const auto* schema = field(doc, "schema");
  if (!schema || schema->string_value() != kSchema) {
    throw InputError("baseline '" + path + "' is not a " + std::string(kSchema) + " report (run 'headcount audit MODEL --format json' to make one)");
  }
  BaselineModel m;
  if (const auto* f = field(doc, "file")) m.file = f->string_value();
  if (const auto* p = field(doc, "parameters"); p && p->has_struct_value()) {
    const auto& ps = p->struct_value();
    if (const auto* v = field(ps, "stored")) m.stored = static_cast<uint64_t>(number_of(*v));
    if (const auto* v = field(ps, "unique")) m.unique = static_cast<uint64_t>(number_of(*v));
    if (const auto* v = field(ps, "attention")) m.attention = static_cast<uint64_t>(number_of(*v));
  }
  if (m.unique == 0) m.unique = m.stored;
  if (const auto* blocks = field(doc, "attention_blocks"); blocks && blocks->has_list_value()) {
    for (const auto& b : blocks->list_value().values()) {
      if (!b.has_struct_value()) continue;
      const auto& bs = b.struct_value();
      BaselineBlock x;
      if (const auto* v = field(bs, "heads"); v && v->kind_case() == google::protobuf::Value::kNumberValue) x.heads = static_cast<int64_t>(v->number_value());
      if (const auto* v = field(bs, "kv_heads"); v && v->kind_case() == google::protobuf::Value::kNumberValue) x.kv_heads = static_cast<int64_t>(v->number_value());
      if (const auto* v = field(bs, "width")) x.width = static_cast<int64_t>(number_of(*v));
      if (const auto* v = field(bs, "form")) x.form = v->string_value();
      m.blocks.push_back(x);
    }
  }
  return m;
}

std::string heads_text(const std::optional<int64_t>& h) { return h ? std::to_string(*h) : "unknown"; }

const BaselineModel* baseline_for(const Audit& a, const std::vector<BaselineModel>& models) {
  if (models.size() == 1) return &models[0];
  auto base = [](const std::string& p) {
    size_t cut = p.find_last_of('/');
    return cut == std::string::npos ? p : p.substr(cut + 1);
  };
  for (const auto& m : models) {
    if (m.file == a.model.path) return &m;
  }
  for (const auto& m : models) {
    if (base(m.file) == base(a.model.path)) return &m;
  }
  return nullptr;
}

}  // namespace

Budget budget_for(const std::string& file, const Budget& global, const std::vector<PathBudget>& budgets) {
  Budget b = global;
  for (const auto& pb : budgets) {
    if (fnmatch(pb.pattern.c_str(), file.c_str(), 0) != 0 && file != pb.pattern) continue;
    if (pb.budget.max_params) b.max_params = pb.budget.max_params;
    if (pb.budget.max_attention_params) b.max_attention_params = pb.budget.max_attention_params;
    if (pb.budget.max_bytes) b.max_bytes = pb.budget.max_bytes;
    if (pb.budget.expect_heads) b.expect_heads = pb.budget.expect_heads;
    break;
  }
  return b;
}

uint64_t parse_count(const std::string& text) {
  std::string t = lower(text);
  uint64_t unit = 1;
  if (!t.empty()) {
    char last = t.back();
    if (last == 'k') unit = 1000;
    else if (last == 'm') unit = 1000000;
    else if (last == 'b' || last == 'g') unit = 1000000000;
    else if (last == 't') unit = 1000000000000ull;
    if (unit != 1) t.pop_back();
  }
  auto v = scaled(t, unit);
  if (!v) throw InputError("'" + text + "' is not a parameter count (examples: 350000, 350k, 110M, 1.5B)");
  return *v;
}

uint64_t parse_bytes(const std::string& text) {
  std::string t = lower(text);
  struct Unit {
    const char* suffix;
    uint64_t bytes;
  };
  static const Unit units[] = {{"kib", 1ull << 10}, {"mib", 1ull << 20}, {"gib", 1ull << 30}, {"tib", 1ull << 40},
                               {"kb", 1000}, {"mb", 1000000}, {"gb", 1000000000}, {"tb", 1000000000000ull},
                               {"k", 1000}, {"m", 1000000}, {"g", 1000000000}, {"b", 1}};
  uint64_t unit = 1;
  for (const auto& u : units) {
    std::string s = u.suffix;
    if (t.size() > s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0) {
      unit = u.bytes;
      t.resize(t.size() - s.size());
      break;
    }
  }
  auto v = scaled(t, unit, /*round_down=*/unit > 1);  // a byte budget of 476.8MiB holds 499,961,036 bytes
  if (!v) throw InputError("'" + text + "' is not a size in bytes (examples: 500000000, 500MB, 476.8MiB, 2GiB)");
  return *v;
}

void parse_tolerance(const std::string& text, uint64_t* absolute, double* fraction) {
  *absolute = 0;
  *fraction = 0.0;
  if (!text.empty() && text.back() == '%') {
    std::string number = text.substr(0, text.size() - 1);
    char* end = nullptr;
    double v = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || !(v >= 0.0) || v > 100.0) {
      throw InputError("'" + text + "' is not a tolerance (examples: 0, 5000, 1k, 0.5%)");
    }
    *fraction = v / 100.0;
    return;
  }
  *absolute = parse_count(text);
}

std::vector<BaselineModel> read_baseline(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read baseline '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) throw InputError("baseline '" + path + "' is empty");
  std::vector<std::string> documents;
  if (text[start] == '[') {
    documents.push_back("{\"documents\": " + text + "}");
  } else if (text.find("\n{", start) != std::string::npos && text.find("\n{", start) < text.find_last_not_of(" \t\r\n")) {
    std::istringstream lines(text);  // JSON lines: one document per line
    std::string line;
    while (std::getline(lines, line)) {
      if (line.find_first_not_of(" \t\r") != std::string::npos) documents.push_back(line);
    }
  } else {
    documents.push_back(text);
  }
  std::vector<BaselineModel> out;
  for (const auto& d : documents) {
    google::protobuf::Struct doc;
    auto status = google::protobuf::util::JsonStringToMessage(d, &doc);
    if (!status.ok()) throw InputError("baseline '" + path + "' is not valid JSON: " + std::string(status.message()));
    if (const auto* list = field(doc, "documents"); list && list->has_list_value() && doc.fields_size() == 1) {
      for (const auto& v : list->list_value().values()) {
        if (!v.has_struct_value()) throw InputError("baseline '" + path + "' holds something other than reports");
        out.push_back(model_from(v.struct_value(), path));
      }
    } else {
      out.push_back(model_from(doc, path));
    }
  }
  return out;
}

std::vector<GateFailure> check_gates(const Audit& a, const GateOptions& o) {
  std::vector<GateFailure> out;
  auto over = [&](const char* gate, const char* what, uint64_t value, uint64_t limit, bool bytes) {
    if (value <= limit) return;
    auto show = [&](uint64_t v) { return bytes ? with_commas(v) + " (" + human_bytes(v) + ")" : with_commas(v); };
    out.push_back({gate, std::string(what) + " " + show(value) + " exceed the budget of " + show(limit) + " by " +
                             with_commas(value - limit) + (bytes ? " bytes" : "") + " (" +
                             pct(limit ? static_cast<double>(value - limit) / static_cast<double>(limit) : 1.0) + ")"});
  };
  const Budget& b = o.budget;
  if (b.max_params) over("max-params", "parameters", a.framework.parameters, *b.max_params, false);
  if (b.max_attention_params) over("max-attention-params", "attention parameters", a.attention.parameters, *b.max_attention_params, false);
  if (b.max_bytes) over("max-bytes", "parameter bytes", a.inventory.bytes, *b.max_bytes, true);
  if (b.expect_heads) {
    std::vector<std::string> wrong;
    for (const auto& blk : a.attention.blocks) {
      if (!blk.heads || *blk.heads != *b.expect_heads) wrong.push_back("block " + std::to_string(blk.index) + " has " + heads_text(blk.heads));
    }
    if (a.attention.blocks.empty()) wrong.push_back("the model has no attention blocks");
    if (!wrong.empty()) {
      std::string msg = "expected " + std::to_string(*b.expect_heads) + " heads in every block, but ";
      for (size_t i = 0; i < wrong.size() && i < 5; ++i) msg += (i ? "; " : "") + wrong[i];
      if (wrong.size() > 5) msg += "; and " + std::to_string(wrong.size() - 5) + " more";
      out.push_back({"expect-heads", msg});
    }
  }
  if (o.fail_on) {
    size_t count = 0;
    std::string first;
    for (const auto& f : a.findings) {
      if (f.severity >= *o.fail_on) {
        if (!count) first = f.rule;
        ++count;
      }
    }
    if (count) {
      out.push_back({"fail-on", std::to_string(count) + (count == 1 ? " finding" : " findings") + " at or above " +
                                    severity_name(*o.fail_on) + " (first: " + first + ")"});
    }
  }
  if (o.baseline) {
    const BaselineModel* base = baseline_for(a, *o.baseline);
    if (!base) {
      out.push_back({"baseline", "the baseline has no report for '" + a.model.path + "'"});
      return out;
    }
    auto moved = [&](const char* what, uint64_t now, uint64_t before) {
      // A percentage tolerance is a share of the baseline's own value of this count.
      uint64_t allowed = o.tolerance;
      if (o.tolerance_fraction > 0.0) allowed = static_cast<uint64_t>(std::floor(o.tolerance_fraction * static_cast<double>(before)));
      uint64_t d = now > before ? now - before : before - now;
      if (d > allowed) {
        out.push_back({"baseline", std::string(what) + " moved from " + with_commas(before) + " to " + with_commas(now) + " (" +
                                       diff_of(now, before) + "; tolerance " + with_commas(allowed) + ")"});
      }
    };
    moved("parameters", a.unique, base->unique);
    moved("attention parameters", a.attention.parameters, base->attention);
    if (base->blocks.size() != a.attention.blocks.size()) {
      out.push_back({"baseline", "attention blocks changed from " + std::to_string(base->blocks.size()) + " to " +
                                     std::to_string(a.attention.blocks.size())});
    }
    size_t n = std::min(base->blocks.size(), a.attention.blocks.size());
    for (size_t i = 0; i < n; ++i) {
      const auto& was = base->blocks[i];
      const auto& now = a.attention.blocks[i];
      std::vector<std::string> changes;
      if (was.heads != now.heads) changes.push_back("heads " + heads_text(was.heads) + " → " + heads_text(now.heads));
      if (was.kv_heads != now.kv_heads) changes.push_back("kv_heads " + heads_text(was.kv_heads) + " → " + heads_text(now.kv_heads));
      if (was.width != now.width) changes.push_back("width " + std::to_string(was.width) + " → " + std::to_string(now.width));
      if (!changes.empty()) {
        std::string msg = "block " + std::to_string(i) + " changed:";
        for (size_t c = 0; c < changes.size(); ++c) msg += (c ? ", " : " ") + changes[c];
        out.push_back({"baseline", msg});
      }
    }
  }
  return out;
}

}  // namespace headcount
