// headcount/checkpoint.h: read a checkpoint's tensor index (safetensors, GGUF) without its payloads.
//
// A checkpoint is the file an export starts from: Hugging Face's safetensors (an 8-byte header
// length, a JSON header naming each tensor's dtype, shape and byte range, then the bytes; sharded
// as model-0000N-of-0000M.safetensors beside model.safetensors.index.json) or llama.cpp's GGUF
// (metadata key/value pairs, tensor infos, then aligned tensor data; split as
// NAME-0000N-of-0000M.gguf). The readers read headers only: a tensor's bytes stay in the file
// until a content comparison asks for them. Every length, offset, count and dimension in a file is
// checked before it is used; what is wrong throws InputError (the message without the file name).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "headcount/file_identity.h"

namespace headcount {

// One tensor of a checkpoint, as its header describes it.
struct CheckpointTensor {
  std::string name;
  std::string dtype;           // as the format names it: "F32", "BF16", "Q4_K", "MXFP4", ...
  std::vector<int64_t> shape;  // row-major, outermost first (GGUF's ne[] reversed): a Linear
                               // weight is [out, in] in both formats
  uint64_t elements = 0;       // the logical element count (a quantized tensor's too)
  uint64_t bytes = 0;          // bytes in the file
  uint64_t offset = 0;         // where its bytes begin, from the start of its file
  int file = 0;                // index into Checkpoint::files
};

// One metadata value of a GGUF file, or a safetensors "__metadata__" string. Arrays keep their
// element type and count; numeric arrays of up to kMostKeptArray elements keep their values (a
// per-layer head count, a sliding-window pattern), longer ones (a tokenizer's vocabulary) only
// their count.
struct CheckpointValue {
  enum class Type { Unsigned, Signed, Float, Bool, String, Array };
  static constexpr uint64_t kMostKeptArray = 65536;
  Type type = Type::String;
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  Type element = Type::Unsigned;   // an array's element type
  uint64_t count = 0;              // an array's element count
  std::vector<double> numbers;     // a numeric or bool array's values, when kept
  std::string type_name;           // as the format names it: "uint32", "array[string]", ...
};

struct Checkpoint {
  std::string format;               // "safetensors" or "gguf"
  std::vector<std::string> files;   // the files read, the first one named on the command line
  std::vector<uint64_t> file_sizes;
  // Each file as the reader opened it: a later read of its tensors' bytes opens it again only
  // when it is still that file (the same device, inode and size).
  std::vector<FileIdentity> file_ids;
  std::vector<CheckpointTensor> tensors;  // in file order, file after file
  std::map<std::string, CheckpointValue> metadata;
  // A sharded safetensors checkpoint: the index's metadata.total_size, when it states one.
  std::optional<uint64_t> declared_total_size;
  uint32_t gguf_version = 0;
  uint64_t alignment = 0;  // GGUF: general.alignment, 32 unless stated
};

// What a path holds, by its name and first bytes: a checkpoint format or "" (an ONNX model, or
// something the loader will refuse).
std::string checkpoint_format(const std::string& path);
// The same by the first bytes of a file of `size` bytes (at least 9 of them readable at `data`).
std::string checkpoint_format_of(const char* data, uint64_t size);

// Reads a safetensors checkpoint: one .safetensors file, a model.safetensors.index.json (its
// shards must lie in its folder), or a folder holding either.
Checkpoint read_safetensors(const std::string& path);

// Reads a GGUF file (versions 2 and 3); a split file (NAME-00001-of-00003.gguf) reads every part.
Checkpoint read_gguf(const std::string& path);

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
