// fuzz_fidelity.cpp: libFuzzer harness over one input split into an ONNX export and a checkpoint
// (fidelity_target.h), compared by the export check (`diff`, `audit --checkpoint`).
#include <cstddef>
#include <cstdint>

#include "fidelity_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_fidelity(data, size);
  return 0;
}
