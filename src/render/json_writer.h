// json_writer.h: a minimal streaming JSON writer for the renderers (internal).
//
// Writes pretty-printed JSON with integers as integers and strings escaped per RFC 8259.
#pragma once

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace headcount {

class JsonWriter {
 public:
  // indent < 0 writes compact JSON on one line (JSON lines).
  explicit JsonWriter(std::ostream& out, int indent = 2) : out_(out), indent_(indent) {}
  // A writer for one value that another writer places, with raw(), `depth` containers deep: it
  // indents as that writer would there and writes no separator before the value.
  JsonWriter(std::ostream& out, int indent, size_t depth)
      : out_(out), indent_(indent), first_(depth, 1), after_key_(true) {}
  ~JsonWriter() { flush(); }
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;
  // Output is gathered in a buffer and written in large pieces; closing the outermost container
  // writes what is left.
  void flush() {
    out_.write(buf_.get(), static_cast<std::streamsize>(len_));
    len_ = 0;
  }

  JsonWriter& begin_object() { open('{'); return *this; }
  JsonWriter& end_object() { close('}'); return *this; }
  JsonWriter& begin_array() { open('['); return *this; }
  JsonWriter& end_array() { close(']'); return *this; }
  JsonWriter& key(std::string_view k) {
    separate();
    write_string(k);
    if (indent_ < 0) put(':');
    else put(": ", 2);
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) { separate(); write_string(s); return *this; }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(uint64_t n) { separate(); number(n); return *this; }
  JsonWriter& value(int64_t n) { separate(); number(n); return *this; }
  JsonWriter& value(int n) { return value(static_cast<int64_t>(n)); }
  JsonWriter& value(bool b) {
    separate();
    if (b) put("true", 4);
    else put("false", 5);
    return *this;
  }
  // The shortest text that reads back as the same double; null for an infinity or NaN (JSON has neither).
  JsonWriter& value(double d) {
    separate();
    char b[32];
    auto r = std::to_chars(b, b + sizeof b, d);
    if (!std::isfinite(d) || r.ec != std::errc()) put("null", 4);
    else put(b, static_cast<size_t>(r.ptr - b));
    return *this;
  }
  JsonWriter& null() { separate(); put("null", 4); return *this; }
  // A value written by a writer made with the depth of this place (a large one goes straight out).
  JsonWriter& raw(std::string_view value) {
    separate();
    if (len_ + value.size() < kFlushAt) {
      put(value.data(), value.size());
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
    put('[');
    bool first = true;
    for (auto x : v) {
      if (!first) {
        if (indent_ < 0) put(',');
        else put(", ", 2);
      }
      number(static_cast<int64_t>(x));
      first = false;
    }
    put(']');
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
  // The buffer is written out when a container closes past kFlushAt bytes, and whenever a write
  // would not fit; it grows only for a single write larger than itself.
  static constexpr size_t kFlushAt = 1u << 16;
  std::ostream& out_;
  int indent_;
  std::vector<char> first_;  // per open container: nothing written yet (a char each, not a bit)
  bool after_key_ = false;
  std::unique_ptr<char[]> buf_{new char[2 * kFlushAt]};  // not zeroed
  size_t len_ = 0;
  size_t cap_ = 2 * kFlushAt;

  // Room for n more bytes at buf_ + len_.
  char* room(size_t n) {
    if (len_ + n > cap_) {
      flush();
      if (n > cap_) {
        cap_ = n;
        buf_.reset(new char[cap_]);
      }
    }
    return buf_.get() + len_;
  }
  void put(const char* p, size_t n) {
    std::memcpy(room(n), p, n);
    len_ += n;
  }
  void put(char c) {
    *room(1) = c;
    ++len_;
  }
  template <typename N>
  void number(N n) {
    char* at = room(24);
    len_ += static_cast<size_t>(std::to_chars(at, at + 24, n).ptr - at);
  }
  void newline() {
    if (indent_ < 0) return;
    static constexpr std::string_view kSpaces = "\n                                                               ";
    size_t n = first_.size() * static_cast<size_t>(indent_) + 1;  // the newline and the indent, copied at once
    if (n <= kSpaces.size()) {
      put(kSpaces.data(), n);
      return;
    }
    char* at = room(n);
    at[0] = '\n';
    std::memset(at + 1, ' ', n - 1);
    len_ += n;
  }
  void separate() {
    if (after_key_) { after_key_ = false; return; }
    if (first_.empty()) return;
    if (!first_.back()) put(',');
    first_.back() = 0;
    newline();
  }
  void open(char c) {
    separate();
    put(c);
    first_.push_back(1);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    put(c);
    if (first_.empty() || len_ >= kFlushAt) flush();
  }
  static constexpr bool is_plain(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }
  // The length of s's first run of bytes that need no escaping.
  static size_t plain_prefix(std::string_view s) {
    size_t i = 0;
#if defined(__SSE2__)
    // 16 bytes at a time: a byte below 0x20 or from 0x80 on is below 0x20 as a signed byte.
    const __m128i space = _mm_set1_epi8(0x20), quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'),
                  del = _mm_set1_epi8(0x7F);
    for (; i + 16 <= s.size(); i += 16) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
      const __m128i bad = _mm_or_si128(_mm_or_si128(_mm_cmplt_epi8(x, space), _mm_cmpeq_epi8(x, quote)),
                                       _mm_or_si128(_mm_cmpeq_epi8(x, backslash), _mm_cmpeq_epi8(x, del)));
      if (const int mask = _mm_movemask_epi8(bad)) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    static constexpr auto kPlain = [] {  // is_plain() of every byte, looked up once a byte
      std::array<bool, 256> t{};
      for (int c = 0; c < 256; ++c) t[static_cast<size_t>(c)] = is_plain(static_cast<unsigned char>(c));
      return t;
    }();
    while (i < s.size() && kPlain[static_cast<unsigned char>(s[i])]) ++i;
    return i;
  }
  // A string in quotes: copied as it is when no byte needs escaping (nearly every name), else
  // escaped (escape_into).
  void write_string(std::string_view s) {
    if (plain_prefix(s) == s.size()) {
      char* at = room(s.size() + 2);
      at[0] = '"';
      std::memcpy(at + 1, s.data(), s.size());
      at[s.size() + 1] = '"';
      len_ += s.size() + 2;
      return;
    }
    std::string escaped;
    escape_into(escaped, s);
    put('"');
    put(escaped.data(), escaped.size());
    put('"');
  }
};

}  // namespace headcount
