// checked_test.cpp: the checked integer every number from a file travels in (headcount/checked.h).
//
// Each expected value is the exact integer result worked in the comment beside it, or unknown where
// that result does not fit in int64 (2^63 - 1 = 9,223,372,036,854,775,807 at most, -2^63 at least),
// where the divisor is zero, or where an operand is unknown. floor_div rounds toward negative
// infinity (NumPy's //); trunc_div rounds toward zero, as ONNX integer Div does (the onnx reference
// implementation and onnxruntime both truncate: Div(-7, 2) = -3); floor_mod takes the sign of the
// divisor, as ONNX Mod with fmod = 0 and NumPy's %.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>

#include "headcount/checked.h"

using namespace headcount;

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();  // -9,223,372,036,854,775,808
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();  //  9,223,372,036,854,775,807
constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();
const Int unknown;

// Known and equal to v (Int::is), with the value shown when it is not.
void is(Int x, int64_t v) {
  INFO("got " << x.str("unknown") << ", expected " << v);
  CHECK(x.is(v));
}

void is_unknown(Int x) {
  INFO("got " << x.str("unknown"));
  CHECK_FALSE(x.known());
}

}  // namespace

TEST_CASE("Int: known and unknown values, and how they read", "[checked]") {
  CHECK_FALSE(Int().known());
  CHECK_FALSE(Int(std::nullopt).known());
  CHECK_FALSE(Int(std::optional<int64_t>()).known());
  is(Int(std::optional<int64_t>(-3)), -3);
  is(Int(kMin), kMin);
  is(Int(kMax), kMax);
  CHECK_FALSE(static_cast<bool>(unknown));
  CHECK(static_cast<bool>(Int(0)));  // a known zero is known, not false
  CHECK(unknown.value_or(7) == 7);
  CHECK(Int(0).value_or(7) == 0);
  CHECK(Int(5).opt() == std::optional<int64_t>(5));
  CHECK(unknown.opt() == std::nullopt);
  CHECK_FALSE(unknown.is(0));
  CHECK(Int(1).positive());
  CHECK_FALSE(Int(0).positive());
  CHECK_FALSE(unknown.positive());
  CHECK(Int(0).non_negative());
  CHECK_FALSE(Int(-1).non_negative());
  CHECK_FALSE(unknown.non_negative());
  CHECK(Int(768).str() == "768");
  CHECK(Int(kMin).str() == "-9223372036854775808");
  CHECK(unknown.str() == "?");
  CHECK(unknown.str("unknown") == "unknown");
}

TEST_CASE("Int: element counts are known and non-negative", "[checked]") {
  CHECK(Int(0).count() == std::optional<uint64_t>(0));
  CHECK(Int(kMax).count() == std::optional<uint64_t>(9223372036854775807u));
  CHECK(Int(-1).count() == std::nullopt);
  CHECK(Int(kMin).count() == std::nullopt);
  CHECK(unknown.count() == std::nullopt);
}

TEST_CASE("Int: from unsigned and from double, unknown outside int64", "[checked]") {
  is(Int::of_unsigned(0), 0);
  is(Int::of_unsigned(9223372036854775807u), kMax);      // 2^63 - 1 fits
  is_unknown(Int::of_unsigned(9223372036854775808u));    // 2^63 does not
  is_unknown(Int::of_unsigned(kUMax));
  is(Int::of_double(64.0), 64);
  is(Int::of_double(-0.0), 0);
  is(Int::of_double(-9223372036854775808.0), kMin);       // -2^63 is exactly a double and fits
  is_unknown(Int::of_double(9223372036854775808.0));      // 2^63: one above the largest int64
  is(Int::of_double(9223372036854774784.0), 9223372036854774784);  // the largest double below 2^63
  is_unknown(Int::of_double(-9223372036854777856.0));     // the next double below -2^63
  is_unknown(Int::of_double(1.5));                        // not a whole number
  is_unknown(Int::of_double(-0.5));
  is_unknown(Int::of_double(std::nan("")));
  is_unknown(Int::of_double(std::numeric_limits<double>::infinity()));
  is_unknown(Int::of_double(-std::numeric_limits<double>::infinity()));
}

TEST_CASE("Int: + and - become unknown on overflow or an unknown operand", "[checked]") {
  is(Int(2) + Int(3), 5);
  is(Int(kMax) + Int(0), kMax);
  is(Int(kMax) + Int(kMin), -1);         // (2^63 - 1) + (-2^63)
  is(Int(kMin) + Int(kMax), -1);
  is_unknown(Int(kMax) + Int(1));        // 2^63
  is_unknown(Int(kMin) + Int(-1));       // -2^63 - 1
  is_unknown(Int(kMax) + Int(kMax));     // 2^64 - 2
  is_unknown(Int(kMin) + Int(kMin));     // -2^64
  is_unknown(Int(0) + unknown);
  is_unknown(unknown + Int(0));
  is_unknown(unknown + unknown);

  is(Int(3) - Int(5), -2);
  is(Int(-1) - Int(kMax), kMin);         // -1 - (2^63 - 1) = -2^63
  is(Int(kMin) - Int(kMin), 0);
  is(Int(-1) - Int(kMin), kMax);         // -1 + 2^63
  is_unknown(Int(kMin) - Int(1));        // -2^63 - 1
  is_unknown(Int(0) - Int(kMin));        // 2^63
  is_unknown(Int(kMax) - Int(-1));       // 2^63
  is_unknown(Int(kMax) - Int(kMin));     // 2^64 - 1
  is_unknown(Int(0) - unknown);
  is_unknown(unknown - Int(0));

  is(-Int(5), -5);
  is(-Int(0), 0);
  is(-Int(kMax), kMin + 1);              // -(2^63 - 1)
  is_unknown(-Int(kMin));                // 2^63
  is_unknown(-unknown);

  Int x = 40;
  x += 2;
  is(x, 42);
  x += unknown;
  is_unknown(x);
  Int y = kMax;
  y += 1;
  is_unknown(y);
}

TEST_CASE("Int: * becomes unknown on overflow or an unknown operand", "[checked]") {
  is(Int(6) * Int(7), 42);
  is(Int(-6) * Int(7), -42);
  is(Int(kMin) * Int(1), kMin);
  is(Int(kMax) * Int(-1), kMin + 1);
  is(Int(kMax) * Int(0), 0);
  is(Int(kMin) * Int(0), 0);
  is(Int(4294967296) * Int(-2147483648), kMin);        // 2^32 x -2^31 = -2^63 fits
  is(Int(3037000499) * Int(3037000499), 9223372030926249001);  // the largest square below 2^63
  is_unknown(Int(3037000500) * Int(3037000500));        // 9,223,372,037,000,250,000 > 2^63 - 1
  is_unknown(Int(4294967296) * Int(2147483648));        // 2^32 x 2^31 = 2^63
  is_unknown(Int(kMin) * Int(-1));                      // 2^63
  is_unknown(Int(-1) * Int(kMin));
  is_unknown(Int(kMax) * Int(2));
  is_unknown(Int(kMin) * Int(2));
  is_unknown(Int(kMax) * Int(kMax));
  is_unknown(Int(kMin) * Int(kMin));
  // An unknown operand makes the product unknown, even times zero: the file did not state it.
  is_unknown(Int(0) * unknown);
  is_unknown(unknown * Int(1));

  Int x = 6;
  x *= 7;
  is(x, 42);
  Int y = kMax;
  y *= 2;
  is_unknown(y);
}

TEST_CASE("Int: floor_div rounds toward negative infinity; zero divisors and -2^63 / -1 are unknown", "[checked]") {
  is(floor_div(7, 2), 3);      // 3.5 -> 3
  is(floor_div(-7, 2), -4);    // -3.5 -> -4
  is(floor_div(7, -2), -4);    // -3.5 -> -4
  is(floor_div(-7, -2), 3);    // 3.5 -> 3
  is(floor_div(-8, 2), -4);    // exact
  is(floor_div(0, -1), 0);
  is(floor_div(-1, kMax), -1);       // -1.08e-19 -> -1
  is(floor_div(1, kMin), -1);        // -1.08e-19 -> -1
  is(floor_div(kMin, 1), kMin);
  is(floor_div(kMin, 2), -4611686018427387904);  // -2^62
  is(floor_div(kMin, kMin), 1);
  is(floor_div(kMin, kMax), -2);     // -1.000000000000000000108 -> -2
  is(floor_div(kMax, kMin), -1);     // -0.99999999999999999989 -> -1
  is(floor_div(kMax, -1), kMin + 1);
  is(floor_div(kMax, kMax), 1);
  is_unknown(floor_div(kMin, -1));   // 2^63 does not fit
  is_unknown(floor_div(5, 0));
  is_unknown(floor_div(0, 0));
  is_unknown(floor_div(kMin, 0));
  is_unknown(floor_div(unknown, 1));
  is_unknown(floor_div(1, unknown));
  is_unknown(floor_div(0, unknown));
}

TEST_CASE("Int: trunc_div rounds toward zero (ONNX integer Div); zero divisors and -2^63 / -1 are unknown", "[checked]") {
  is(trunc_div(7, 2), 3);      // 3.5 -> 3
  is(trunc_div(-7, 2), -3);    // -3.5 -> -3 (floor would give -4)
  is(trunc_div(7, -2), -3);    // -3.5 -> -3
  is(trunc_div(-7, -2), 3);    // 3.5 -> 3
  is(trunc_div(-8, 2), -4);    // exact
  is(trunc_div(-1, 2), 0);     // -0.5 -> 0
  is(trunc_div(0, -1), 0);
  is(trunc_div(-1, kMax), 0);        // -1.08e-19 -> 0
  is(trunc_div(1, kMin), 0);         // -1.08e-19 -> 0
  is(trunc_div(kMin, 1), kMin);
  is(trunc_div(kMin, 2), -4611686018427387904);  // -2^62
  is(trunc_div(kMin, kMin), 1);
  is(trunc_div(kMin, kMax), -1);     // -1.000000000000000000108 -> -1
  is(trunc_div(kMax, kMin), 0);      // -0.99999999999999999989 -> 0
  is(trunc_div(kMax, -1), kMin + 1);
  is(trunc_div(kMin + 1, -1), kMax);
  is_unknown(trunc_div(kMin, -1));   // 2^63 does not fit
  is_unknown(trunc_div(5, 0));
  is_unknown(trunc_div(0, 0));
  is_unknown(trunc_div(kMin, 0));
  is_unknown(trunc_div(unknown, 1));
  is_unknown(trunc_div(1, unknown));
  is_unknown(trunc_div(0, unknown));
}

TEST_CASE("Int: exact_div only when the divisor divides exactly", "[checked]") {
  is(exact_div(64, 16), 4);
  is(exact_div(-64, 16), -4);
  is(exact_div(64, -16), -4);
  is(exact_div(0, 5), 0);
  is(exact_div(kMin, 2), -4611686018427387904);  // -2^62
  is(exact_div(kMin, kMin), 1);
  is(exact_div(kMax, -1), kMin + 1);
  is(exact_div(kMax, kMax), 1);
  is_unknown(exact_div(64, 15));      // 4.27: a head size that does not divide the width
  is_unknown(exact_div(-7, 2));
  is_unknown(exact_div(kMin, kMax));  // -1.000...
  is_unknown(exact_div(kMin, -1));    // 2^63
  is_unknown(exact_div(64, 0));
  is_unknown(exact_div(0, 0));
  is_unknown(exact_div(unknown, 1));
  is_unknown(exact_div(64, unknown));
}

TEST_CASE("Int: floor_mod takes the sign of the divisor (ONNX Mod, fmod = 0)", "[checked]") {
  // a - floor(a / b) x b:
  is(floor_mod(7, 3), 1);      // 7 - 2 x 3
  is(floor_mod(-7, 3), 2);     // -7 - (-3) x 3
  is(floor_mod(7, -3), -2);    // 7 - (-3) x (-3)
  is(floor_mod(-7, -3), -1);   // -7 - 2 x (-3)
  is(floor_mod(6, 3), 0);
  is(floor_mod(0, -5), 0);
  is(floor_mod(kMin, -1), 0);          // -2^63 = 2^63 x -1 exactly (the C++ % would trap)
  is(floor_mod(kMax, -1), 0);
  is(floor_mod(kMin, 1), 0);
  is(floor_mod(kMin, kMin), 0);
  is(floor_mod(kMin, kMax), kMax - 1); // floor = -2: -2^63 + 2 x (2^63 - 1) = 2^63 - 2
  is(floor_mod(kMax, kMin), -1);       // floor = -1: (2^63 - 1) - 2^63
  is(floor_mod(-1, kMax), kMax - 1);   // floor = -1: -1 + 2^63 - 1
  is(floor_mod(1, kMin), kMin + 1);    // floor = -1: 1 - 2^63
  is(floor_mod(kMin, 2), 0);
  is(floor_mod(kMax, 2), 1);
  is_unknown(floor_mod(5, 0));
  is_unknown(floor_mod(kMin, 0));
  is_unknown(floor_mod(unknown, 3));
  is_unknown(floor_mod(3, unknown));
}

TEST_CASE("Int: same and differ never hold for an unknown", "[checked]") {
  CHECK(same(4, 4));
  CHECK_FALSE(same(4, 5));
  CHECK_FALSE(same(unknown, unknown));
  CHECK_FALSE(same(unknown, 4));
  CHECK(differ(4, 5));
  CHECK_FALSE(differ(4, 4));
  CHECK_FALSE(differ(unknown, 4));
  CHECK_FALSE(differ(4, unknown));
  CHECK(same(kMin, kMin));
  CHECK(differ(kMin, kMax));
}

TEST_CASE("clamp_index: a Slice bound clamped to [0, size], negative from the end", "[checked]") {
  is(clamp_index(3, 10), 3);
  is(clamp_index(-1, 10), 9);         // the last element
  is(clamp_index(-10, 10), 0);
  is(clamp_index(-11, 10), 0);        // before the start: clamped
  is(clamp_index(10, 10), 10);
  is(clamp_index(11, 10), 10);        // past the end: clamped
  is(clamp_index(kMin, 10), 0);       // the exporters' "from the start"
  is(clamp_index(kMax, 10), 10);      // and "to the end"
  is(clamp_index(kMin, kMax), 0);
  is(clamp_index(-1, kMax), kMax - 1);
  is(clamp_index(kMax, kMax), kMax);
  is(clamp_index(0, 0), 0);
  is(clamp_index(-1, 0), 0);
  is_unknown(clamp_index(0, -1));     // no axis has a negative size
  is_unknown(clamp_index(0, kMin));
  is_unknown(clamp_index(unknown, 10));
  is_unknown(clamp_index(3, unknown));
}

TEST_CASE("mul_overflows and add_overflows: unsigned counts never wrap", "[checked]") {
  uint64_t out = 123;
  CHECK_FALSE(mul_overflows(4096, 4096, &out));
  CHECK(out == 16777216u);
  CHECK_FALSE(mul_overflows(0, kUMax, &out));
  CHECK(out == 0u);
  CHECK_FALSE(mul_overflows(kUMax, 1, &out));
  CHECK(out == kUMax);
  CHECK_FALSE(mul_overflows(4294967296u, 2147483648u, &out));  // 2^32 x 2^31 = 2^63 fits unsigned
  CHECK(out == 9223372036854775808u);
  CHECK_FALSE(mul_overflows(4294967295u, 4294967297u, &out));  // (2^32 - 1)(2^32 + 1) = 2^64 - 1
  CHECK(out == kUMax);
  CHECK(mul_overflows(4294967296u, 4294967296u, &out));        // 2^64
  CHECK(mul_overflows(kUMax, 2, &out));
  CHECK(mul_overflows(9223372036854775808u, 2, &out));         // 2^64

  CHECK_FALSE(add_overflows(kUMax, 0, &out));
  CHECK(out == kUMax);
  CHECK_FALSE(add_overflows(9223372036854775808u, 9223372036854775807u, &out));  // 2^64 - 1
  CHECK(out == kUMax);
  CHECK(add_overflows(kUMax, 1, &out));
  CHECK(add_overflows(9223372036854775808u, 9223372036854775808u, &out));      // 2^64
}
