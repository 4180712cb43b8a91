// checked.cpp: the checked integer type every number from a file travels in.
#include "headcount/checked.h"

#include <cmath>

namespace headcount {

Int Int::of_unsigned(uint64_t v) {
  if (v > static_cast<uint64_t>(INT64_MAX)) return {};
  return Int(static_cast<int64_t>(v));
}

Int Int::of_double(double v) {
  // 2^63 is exactly representable; every double below it and at or above -2^63 converts.
  if (!std::isfinite(v) || v != std::trunc(v) || v >= 9223372036854775808.0 || v < -9223372036854775808.0) return {};
  return Int(static_cast<int64_t>(v));
}

std::optional<uint64_t> Int::count() const {
  if (!known_ || v_ < 0) return std::nullopt;
  return static_cast<uint64_t>(v_);
}

std::string Int::str(const char* unknown) const { return known_ ? std::to_string(v_) : std::string(unknown); }

Int operator+(Int a, Int b) {
  int64_t r = 0;
  if (!a.known_ || !b.known_ || __builtin_add_overflow(a.v_, b.v_, &r)) return {};
  return Int(r);
}

Int operator-(Int a, Int b) {
  int64_t r = 0;
  if (!a.known_ || !b.known_ || __builtin_sub_overflow(a.v_, b.v_, &r)) return {};
  return Int(r);
}

Int operator*(Int a, Int b) {
  int64_t r = 0;
  if (!a.known_ || !b.known_ || __builtin_mul_overflow(a.v_, b.v_, &r)) return {};
  return Int(r);
}

Int operator-(Int a) { return Int(0) - a; }

Int floor_div(Int a, Int b) {
  if (!a.known_ || !b.known_ || b.v_ == 0 || (a.v_ == INT64_MIN && b.v_ == -1)) return {};
  int64_t q = a.v_ / b.v_;
  if ((a.v_ % b.v_ != 0) && ((a.v_ < 0) != (b.v_ < 0))) --q;
  return Int(q);
}

Int trunc_div(Int a, Int b) {
  if (!a.known_ || !b.known_ || b.v_ == 0 || (a.v_ == INT64_MIN && b.v_ == -1)) return {};
  return Int(a.v_ / b.v_);  // C++ division truncates toward zero
}

Int exact_div(Int a, Int b) {
  if (!a.known_ || !b.known_ || b.v_ == 0 || (a.v_ == INT64_MIN && b.v_ == -1) || a.v_ % b.v_ != 0) return {};
  return Int(a.v_ / b.v_);
}

Int floor_mod(Int a, Int b) {
  if (!a.known_ || !b.known_ || b.v_ == 0) return {};
  if (b.v_ == -1) return Int(0);  // INT64_MIN % -1 traps on x86
  int64_t r = a.v_ % b.v_;
  if (r != 0 && ((r < 0) != (b.v_ < 0))) r += b.v_;
  return Int(r);
}

Int clamp_index(Int index, Int size) {
  if (!index.known() || !size.known() || *size < 0) return {};
  int64_t i = *index;
  if (i < 0) i = i < -*size ? 0 : i + *size;  // no overflow: -*size <= i < 0
  return Int(i > *size ? *size : i);
}

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }

bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace headcount
