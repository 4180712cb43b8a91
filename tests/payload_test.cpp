// The value decoding and rounding the export-fidelity comparison reads weights with
// (src/payload.h): each expected value is worked from the IEEE 754 layouts in the comment.
#include <catch2/catch.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "payload.h"

using namespace headcount;
using T = onnx::TensorProto;

TEST_CASE("floats decode from each type's bytes", "[payload]") {
  // bfloat16 0x3FC0 is the upper half of float32 0x3FC00000 = 1.5; float16 0x3E00 = 2^0 · 1.5;
  // float16 0x0001 is the smallest subnormal, 2^-24.
  const uint16_t bf[] = {0x3FC0, 0xC000};  // 1.5, -2
  const uint16_t h[] = {0x3E00, 0x0001};
  double out[2];
  decode_floats(T::BFLOAT16, reinterpret_cast<const char*>(bf), 2, out);
  CHECK(out[0] == 1.5);
  CHECK(out[1] == -2.0);
  decode_floats(T::FLOAT16, reinterpret_cast<const char*>(h), 2, out);
  CHECK(out[0] == 1.5);
  CHECK(out[1] == std::ldexp(1.0, -24));
  CHECK(significand_bits(T::FLOAT) == 23);
  CHECK(significand_bits(T::FLOAT16) == 10);
  CHECK(significand_bits(T::BFLOAT16) == 7);
  CHECK(significand_bits(T::INT8) == 0);
}

TEST_CASE("values round to the narrower type to nearest, ties to even", "[payload]") {
  // float16 near 1 steps by 2^-10: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 and goes to the
  // even 1; 1 + 3·2^-11 is a tie between 1 + 2^-10 and 1 + 2^-9 and goes to the even 1 + 2^-9.
  CHECK(round_to(T::FLOAT16, 1.0 + std::ldexp(1.0, -11)) == 1.0);
  CHECK(round_to(T::FLOAT16, 1.0 + 3 * std::ldexp(1.0, -11)) == 1.0 + std::ldexp(1.0, -9));
  CHECK(round_to(T::FLOAT16, 1.0 + std::ldexp(1.0, -10)) == 1.0 + std::ldexp(1.0, -10));
  // Largest float16 65,504; from 65,520 (halfway to 2^16) up, infinity.
  CHECK(round_to(T::FLOAT16, 65519.0) == 65504.0);
  CHECK(std::isinf(round_to(T::FLOAT16, 65520.0)));
  // Subnormals step by 2^-24: 3·2^-26 is 0.75 of a step, rounds up to 2^-24; 2^-26 to 0.
  CHECK(round_to(T::FLOAT16, 3 * std::ldexp(1.0, -26)) == std::ldexp(1.0, -24));
  CHECK(round_to(T::FLOAT16, -std::ldexp(1.0, -26)) == 0.0);
  // bfloat16 near 1 steps by 2^-7: 1 + 2^-8 is a tie to the even 1; 1 + 3·2^-8 goes to 1 + 2^-6.
  CHECK(round_to(T::BFLOAT16, 1.0 + std::ldexp(1.0, -8)) == 1.0);
  CHECK(round_to(T::BFLOAT16, 1.0 + 3 * std::ldexp(1.0, -8)) == 1.0 + std::ldexp(1.0, -6));
  CHECK(round_to(T::BFLOAT16, -1.0 - std::ldexp(1.0, -7)) == -1.0 - std::ldexp(1.0, -7));
  // float32 keeps 23 bits: 1 + 2^-24 is a tie to 1.
  CHECK(round_to(T::FLOAT, 1.0 + std::ldexp(1.0, -24)) == 1.0);
  CHECK(std::isnan(round_to(T::FLOAT16, NAN)));
  CHECK(round_to(T::DOUBLE, 0.1) == 0.1);
}
