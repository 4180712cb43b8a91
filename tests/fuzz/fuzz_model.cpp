// fuzz_model.cpp: structure-aware libFuzzer harness. Inputs stay valid ONNX protobufs and are
// mutated by model_mutator (edge integers, renamed and rewired nodes, nested subgraphs), so the
// fuzzer spends its time in shape evaluation, matching and the rules rather than in the wire reader.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "fuzz_target.h"
#include "model_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::run_all(data, size);
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  onnx::ModelProto m;
  // Bytes that are not a model (rare once the corpus is models): let libFuzzer mutate them.
  if (!m.ParseFromArray(data, static_cast<int>(size))) return LLVMFuzzerMutate(data, size, max_size);
  std::mt19937_64 rng(seed);
  fuzz::mutate(m, rng, 1 + static_cast<int>(rng() % 3));
  std::string out;
  if (!m.SerializeToString(&out) || out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
