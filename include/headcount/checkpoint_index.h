// headcount/checkpoint_index.h: a checkpoint's tensor index as its readers read it (checkpoint.h):
// its tensors with their dtype, shape and place, its metadata and its files. A checkpoint's Model
// holds one (Model::checkpoint); the stages and the renderers read it, never the files.
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
  // GGUF: a block-quantized tensor whose rows are not whole blocks, its blocks packed across the
  // whole tensor (its element count a multiple of the block). llama.cpp's loader refuses it; the
  // audit counts it (elements from the dims, bytes from the packed total) and says so.
  bool partial_rows = false;
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

// The formats headcount reads, as the code asks for them (their table, how each is recognised and
// opened, is src/checkpoint/formats.h); a format's name is printed, its kind is compared.
enum class FormatKind { Onnx, Safetensors, Gguf };

struct Checkpoint {
  FormatKind kind = FormatKind::Safetensors;  // set by the reader
  std::string format;               // its name as printed: "safetensors" or "gguf"
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
  // GGUF: a big-endian file (llama.cpp's byte-swapped twin for big-endian hosts): its header was
  // read big-endian; its tensors' values are not read (no value or content comparison of them).
  bool big_endian = false;
};

}  // namespace headcount
