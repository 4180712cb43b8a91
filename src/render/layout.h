// layout.h: what the text renderers share: aligned tables that measure cells by display width,
// word wrapping, and the model's producer and opsets as reports name them (internal).
#pragma once

#include <algorithm>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "headcount/results/audit.h"
#include "headcount/model.h"
#include "headcount/numbers.h"
#include "json_writer.h"

namespace headcount::renderers {

// How a text report shows one control character (or a byte that is not UTF-8) from a file:
// \n, \r and \t, else \xNN.
inline std::string shown_byte(unsigned char c) {
  if (c == '\n') return "\\n";
  if (c == '\r') return "\\r";
  if (c == '\t') return "\\t";
  static const char* digits = "0123456789abcdef";
  return std::string("\\x") + digits[c >> 4] + digits[c & 15];
}

// Text from a file (a tensor's or node's name, a producer, a config's model_type, and the
// messages that quote them) as a text report prints it: its control characters made visible, so
// a newline in a name cannot begin a line of the report's own (one a script reads as
// "headcount: error: ..."), and no escape sequence reaches the terminal. C0 and C1 controls, DEL
// and bytes that are not valid UTF-8 are shown as shown_byte() writes them.
inline std::string visible(std::string_view s) {
  auto plain = [&](size_t i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    return c >= 0x20 && c < 0x7F;
  };
  size_t i = 0;
  while (i < s.size() && plain(i)) ++i;
  if (i == s.size()) return std::string(s);
  std::string o(s.substr(0, i));
  for (; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 0 : JsonWriter::utf8_length(s, i);
    if (plain(i)) {
      o += static_cast<char>(c);
    } else if (len == 0 || (c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0)) {
      o += shown_byte(c);  // a control, a byte that is not UTF-8, or a C1 control's first byte (the rest in turn)
    } else {
      o.append(s.data() + i, len);
      i += len - 1;
    }
  }
  return o;
}

inline std::string node_label(const Model& m, int ni) {
  const auto& n = *m.nodes[ni].rec;
  return n.name().empty() ? std::string(n.op_type()) + "#" + std::to_string(ni) : std::string(n.name());
}

inline std::string producer_string(const onnx::ModelProto& p) {
  std::string s = p.producer_name().empty() ? "unknown producer" : visible(p.producer_name());
  if (!p.producer_version().empty()) s += " " + visible(p.producer_version());
  return s;
}

inline std::string opset_string(const onnx::ModelProto& p) {
  std::string s;
  for (const auto& o : p.opset_import()) {
    if (!s.empty()) s += ", ";
    s += (o.domain().empty() || o.domain() == "ai.onnx" ? std::string("opset ") : visible(o.domain()) + " ") +
         std::to_string(o.version());
  }
  return s;
}

// Left- or right-aligned column printing for the text tables; cells are measured in terminal
// columns (display_width), so "…" and other multi-byte characters keep the columns aligned.
struct Table {
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right;  // per column
  void print(std::ostream& out, const std::string& indent) const {
    std::vector<size_t> w(right.size(), 0);
    std::vector<std::vector<std::string>> shown(rows.size());  // each cell as printed (visible)
    for (size_t i = 0; i < rows.size(); ++i) {
      for (const auto& cell : rows[i]) shown[i].push_back(visible(cell));
      for (size_t c = 0; c < shown[i].size() && c < w.size(); ++c) w[c] = std::max(w[c], display_width(shown[i][c]));
    }
    for (const auto& r : shown) {
      std::string line = indent;
      for (size_t c = 0; c < r.size() && c < w.size(); ++c) {
        const std::string& cell = r[c];
        std::string pad(w[c] - display_width(cell), ' ');
        line += right[c] ? pad + cell : cell + (c + 1 < r.size() ? pad : "");
        if (c + 1 < r.size()) line += "  ";
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    }
  }
};

inline std::string optional_int(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "?"; }

// Word-wraps `text` to lines of at most `width` columns, every line after the first indented.
inline std::string wrap(const std::string& text, size_t first_used, size_t indent, size_t width = 100) {
  std::string out, word;
  size_t col = first_used;
  auto flush = [&] {
    if (word.empty()) return;
    size_t len = 0;
    for (unsigned char c : word) len += (c & 0xC0) != 0x80;  // count UTF-8 characters, not bytes
    if (col > indent && col + 1 + len > width) {
      out += "\n" + std::string(indent, ' ');
      col = indent;
    } else if (col > first_used || (col > indent && !out.empty())) {
      out += ' ';
      ++col;
    }
    out += word;
    col += len;
    word.clear();
  };
  for (char c : visible(text)) {
    if (c == ' ') flush();
    else word += c;
  }
  flush();
  return out;
}

inline std::string truncate(const std::string& s, size_t n) {
  return s.size() <= n ? s : "…" + s.substr(s.size() - (n - 1));
}

// "4, 4/2": the distinct head counts of a model's blocks, for summary lines.
inline std::string heads_summary(const Audit& a) {
  std::vector<std::string> seen;
  for (const auto& b : a.attention.blocks) {
    std::string h = b.heads ? std::to_string(*b.heads) : "?";
    if (b.kv_heads && b.heads && *b.kv_heads != *b.heads) h += "/" + std::to_string(*b.kv_heads);
    if (std::find(seen.begin(), seen.end(), h) == seen.end()) seen.push_back(h);
  }
  std::string s;
  for (size_t i = 0; i < seen.size(); ++i) s += (i ? ", " : "") + seen[i];
  return s.empty() ? "-" : s;
}

// Text from the file (tensor and node names reach messages) is escaped so it cannot become
// markup in a pull-request comment: no links ([ ]), HTML (< >), entities (&), emphasis (* _ ~),
// code (`) or table cells (|); a newline would end the table row.
inline std::string md_text(const std::string& s) {
  std::string o;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r') o += ' ';
    else if (u < 0x20 || u == 0x7F) o += shown_byte(u);  // \t, \xNN: shown, not sent on
    else if (std::string_view("\\`*_[]<>|~&").find(c) != std::string_view::npos) o += std::string("\\") + c;
    else o += c;
  }
  return o;
}

}  // namespace headcount::renderers
