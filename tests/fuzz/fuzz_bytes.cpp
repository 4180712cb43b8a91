// fuzz_bytes.cpp: libFuzzer harness over raw bytes: the wire reader and everything after it.
#include <cstddef>
#include <cstdint>

#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_all(data, size);
  return 0;
}
