// json_writer.h: a minimal streaming JSON writer for the renderers (internal).
//
// Writes pretty-printed JSON with integers as integers and strings escaped per RFC 8259.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace headcount {

class JsonWriter {
 public:
  // indent < 0 writes compact JSON on one line (JSON lines).
  explicit JsonWriter(std::ostream& out, int indent = 2) : out_(out), indent_(indent) {}
  // A writer for one value that another writer places, with raw(), `depth` containers deep: it
  // indents as that writer would there and writes no separator before the value.
  JsonWriter(std::ostream& out, int indent, size_t depth)
      : out_(out), indent_(indent), first_(depth, true), after_key_(true) {}
  ~JsonWriter() { flush(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  // Output is gathered in a buffer and written in large pieces; closing the outermost container
  // writes what is left.
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }
  JsonWriter& key(std::string_view k) {
    separate();
    write_string(k);
    buf_ += indent_ < 0 ? ":" : ": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { separate(); write_string(s); return *this; }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(uint64_t n) { separate(); number(n); return *this; }
  JsonWriter& value(int64_t n) { separate(); number(n); return *this; }
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(bool b) { separate(); buf_ += b ? "true" : "false"; return *this; }
  // The shortest text that reads back as the same double; null for an infinity or NaN (JSON has neither).
  JsonWriter& value(double d) {
    separate();
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, d);
    if (!std::isfinite(d) || r.ec != std::errc()) buf_ += "null";
    else buf_.append(b, r.ptr);
    return *this;
  }
  JsonWriter& null() { separate(); buf_ += "null"; return *this; }
  // A value written by a writer made with the depth of this place (a large one goes straight out).
  JsonWriter& raw(std::string_view value) {
    separate();
    if (buf_.size() + value.size() < (1u << 16)) {
      buf_ += value;
    } else {
      flush();
      out_.write(value.data(), static_cast<std::streamsize>(value.size()));
    }
    return *this;
  }
  size_t depth() const { return first_.size(); }
  // A list of integers on one line: shapes stay readable.
  template <typename Ints>
  JsonWriter& int_array(const Ints& v) {
    separate();
    buf_ += '[';
    bool first = true;
    for (auto x : v) {
      buf_ += first ? "" : indent_ < 0 ? "," : ", ";
      number(static_cast<int64_t>(x));
      first = false;
    }
    buf_ += ']';
    return *this;
  }
  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) { key(k); return value(v); }

  // RFC 8259 escaping of valid UTF-8; bytes that are not valid UTF-8 (names in a hostile file can
  // hold any bytes) become U+FFFD, so the document always parses.
  static std::string escape(std::string_view s) {
    std::string o;
    escape_into(o, s);
    return o;
  }
  static void escape_into(std::string& o, std::string_view s) {
    for (size_t i = 0; i < s.size(); ++i) {
      size_t plain = i;  // a run that needs no escaping is copied at once
      while (plain < s.size() && is_plain(static_cast<unsigned char>(s[plain]))) ++plain;
      if (plain > i) {
        o.append(s.data() + i, plain - i);
        i = plain;
        if (i == s.size()) break;
      }
      unsigned char c = static_cast<unsigned char>(s[i]);
      if (c >= 0x80) {
        size_t len = utf8_length(s, i);
        if (len == 0) {
          o += "\xEF\xBF\xBD";
        } else {
          o.append(s.data() + i, len);
          i += len - 1;
        }
        continue;
      }
      switch (c) {
        case '"': o += "\\\""; break;
        case '\\': o += "\\\\"; break;
        case '\n': o += "\\n"; break;
        case '\r': o += "\\r"; break;
        case '\t': o += "\\t"; break;
        default:
          if (c < 0x20 || c == 0x7F) {
            static const char* hex = "0123456789abcdef";
            o += "\\u00";
            o += hex[c >> 4];
            o += hex[c & 15];
          } else {
            o += static_cast<char>(c);
          }
      }
    }
  }

  // The length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms,
  // no surrogates, at most U+10FFFF), or 0 when it is not one.
  static size_t utf8_length(std::string_view s, size_t i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) return 0;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    }
    return len;
  }

 private:
  std::ostream& out_;
  int indent_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool after_key_ = false;
  std::string buf_;

  template <typename N>
  void number(N n) {
    char digits[24];
    auto r = std::to_chars(digits, digits + sizeof digits, n);
    buf_.append(digits, r.ptr);
  }
  void newline() {
    if (indent_ < 0) return;
    static constexpr std::string_view kSpaces = "\n                                                               ";
    size_t n = first_.size() * static_cast<size_t>(indent_) + 1;  // the newline and the indent, copied at once
    if (n <= kSpaces.size()) {
      buf_.append(kSpaces.data(), n);
      return;
    }
    buf_ += '\n';
    buf_.append(n - 1, ' ');
  }
  void separate() {
    if (after_key_) { after_key_ = false; return; }
    if (first_.empty()) return;
    if (!first_.back()) buf_ += ',';
    first_.back() = false;
    newline();
  }
  void open(char c) {
    separate();
    buf_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    buf_ += c;
    if (first_.empty() || buf_.size() >= (1u << 16)) flush();
  }
  static bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }
  void write_string(std::string_view s) {
    buf_ += '"';
    escape_into(buf_, s);
    buf_ += '"';
  }
};

}  // namespace headcount
