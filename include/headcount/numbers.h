// headcount/numbers.h: how numbers are written in every report, finding and gate message.
//
// Rules and gates format counts without including a renderer; renderers use the same functions.
#pragma once

#include <cstdint>
#include <string>

namespace headcount {

// "1,234,567"
std::string with_commas(uint64_t n);
// "-1,234": a signed count (INT64_MIN included).
std::string with_commas_signed(int64_t n);
// "437.9 MB": decimal units.
std::string human_bytes(uint64_t n);
// 524288 -> "512.0 KiB": powers of 1024, as memory sizes are usually given.
std::string binary_bytes(uint64_t n);
// "25.9%" of `whole`; "?" when whole is 0 (nothing to compare with).
std::string percent(uint64_t part, uint64_t whole);
// "1 tensor", "3 tensors", "1,024 heads": the count with commas and the right noun.
std::string count_of(uint64_t n, const std::string& singular, const std::string& plural);
// Columns a UTF-8 string takes in a terminal: code points, wide East Asian characters as two,
// combining marks as none. Used to align text tables.
size_t display_width(const std::string& s);

}  // namespace headcount
