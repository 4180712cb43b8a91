// headcount/dtypes.h: the element types checkpoint formats name, as tables (src/dtypes.cpp).
#pragma once

#include <cstdint>
#include <string>

namespace headcount {

// The element types safetensors names (GGUF names its plain types alike): bits per element, and
// the ONNX TensorProto data type (0 for F8_E8M0 and the F6 types, which ONNX lacks); null for a
// name neither format defines.
struct CheckpointDtype {
  const char* name;
  int bits;
  int32_t onnx;
};
const CheckpointDtype* checkpoint_dtype(const std::string& name);

// GGUF's tensor types (ggml_type): the name, the elements per block and the bytes per block; null
// for a type number the reader does not know.
struct GgmlType {
  uint32_t id;
  const char* name;
  uint32_t block_elements;
  uint32_t block_bytes;
};
const GgmlType* ggml_type(uint32_t id);

}  // namespace headcount
