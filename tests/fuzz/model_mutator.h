// model_mutator.h: a structure-aware mutator for onnx::ModelProto, written with protobuf's own
// Reflection API (Debian has no libprotobuf-mutator).
//
// Each step makes one change of the kind hostile files are made of: an integer set to an edge
// value (0, -1, INT64_MIN, INT64_MAX, 2^31, 2^53 ...), a name or op type replaced, a constant's
// bytes overwritten, a repeated message duplicated, dropped or swapped, a node rewired, or a node
// or the whole graph moved into a nested subgraph. The fuzz_model harness uses it as libFuzzer's
// custom mutator; the robustness test uses it on the samples in the normal build.
#pragma once

#include <random>

#include <onnx/onnx_pb.h>

namespace fuzz {

// Applies `steps` random mutations to `m`.
void mutate(onnx::ModelProto& m, std::mt19937_64& rng, int steps = 1);

}  // namespace fuzz
