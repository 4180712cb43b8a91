// fuzz_gguf.cpp: libFuzzer harness over raw bytes read as a GGUF checkpoint (read_gguf).
#include <cstddef>
#include <cstdint>

#include "gguf_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_gguf(data, size);
  return 0;
}
