// headcount/checked.h: arithmetic on numbers that come from a model file.
//
// Every dim, attribute and constant in a file is attacker-controlled: INT64_MIN, -1, 0 and
// 2^63-1 reach every division, product and cast. `Int` carries such a number through shape
// evaluation, matching and rules; its arithmetic reports overflow and zero divisors by becoming
// *unknown*, exactly as a dim the file does not state is unknown. It never wraps or traps, so no
// call site has to remember a guard. Unsigned element and byte counts use the checked helpers at
// the bottom, which return false instead of wrapping.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace headcount {

class Int {
 public:
  constexpr Int() = default;                                  // unknown
  constexpr Int(std::nullopt_t) {}                            // unknown
  constexpr Int(int64_t v) : known_(true), v_(v) {}           // a number the file states
  constexpr Int(std::optional<int64_t> v) : known_(v.has_value()), v_(v.value_or(0)) {}
  static Int of_unsigned(uint64_t v);  // unknown above INT64_MAX
  static Int of_double(double v);      // unknown unless a whole number inside int64's range

  constexpr bool known() const { return known_; }
  constexpr bool has_value() const { return known_; }
  constexpr explicit operator bool() const { return known_; }
  // The value; only meaningful when known() (as with std::optional).
  constexpr int64_t operator*() const { return v_; }
  constexpr int64_t value_or(int64_t fallback) const { return known_ ? v_ : fallback; }
  constexpr std::optional<int64_t> opt() const { return known_ ? std::optional<int64_t>(v_) : std::nullopt; }
  // Known and equal to v.
  constexpr bool is(int64_t v) const { return known_ && v_ == v; }
  constexpr bool positive() const { return known_ && v_ > 0; }
  constexpr bool non_negative() const { return known_ && v_ >= 0; }
  // As an element count: known and >= 0.
  std::optional<uint64_t> count() const;
  // "768", or `unknown` when unknown.
  std::string str(const char* unknown = "?") const;

  friend Int operator+(Int a, Int b);
  friend Int operator-(Int a, Int b);
  friend Int operator*(Int a, Int b);
  friend Int operator-(Int a);
  // Floor division (NumPy's //, Python's //): unknown for a zero divisor and INT64_MIN / -1.
  friend Int floor_div(Int a, Int b);
  // Division rounding toward zero (ONNX integer Div, C++ /): unknown for a zero divisor and
  // INT64_MIN / -1.
  friend Int trunc_div(Int a, Int b);
  // a / b only when b divides a exactly (a head size from a width, say); unknown otherwise.
  friend Int exact_div(Int a, Int b);
  // a mod b with the sign of b (ONNX Mod with fmod = 0); unknown for a zero divisor.
  friend Int floor_mod(Int a, Int b);
  Int& operator+=(Int b) { return *this = *this + b; }
  Int& operator*=(Int b) { return *this = *this * b; }

 private:
  bool known_ = false;
  int64_t v_ = 0;
};

Int operator+(Int a, Int b);
Int operator-(Int a, Int b);
Int operator*(Int a, Int b);
Int operator-(Int a);
Int floor_div(Int a, Int b);
Int trunc_div(Int a, Int b);
Int exact_div(Int a, Int b);
Int floor_mod(Int a, Int b);

// Both known and equal: an unknown never equals anything, not even another unknown.
constexpr bool same(Int a, Int b) { return a.known() && b.known() && *a == *b; }
// Both known and different.
constexpr bool differ(Int a, Int b) { return a.known() && b.known() && *a != *b; }

// An index into an axis of `size` (negative counts from the end) clamped to [0, size], as Slice
// and Shape read their bounds. Unknown when the index or the size is.
Int clamp_index(Int index, Int size);

// Checked unsigned arithmetic for element and byte counts: true when the result does not fit.
bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out);
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out);

}  // namespace headcount
