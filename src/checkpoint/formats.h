// checkpoint/formats.h: the table of the formats headcount reads, one row each: its name, how a
// path or its first bytes are recognised, and how it is opened into a Model. A new format is one
// row (and its reader); audit.cpp asks the table, never a format's name.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "headcount/checkpoint_index.h"
#include "headcount/load.h"
#include "headcount/model.h"

namespace headcount {
class SourceFolder;
}

namespace headcount {

// The fewest first bytes a row's by_bytes reads (safetensors: the 8-byte length and the '{').
constexpr uint64_t kFormatHeadBytes = 9;

struct FormatRow {
  FormatKind kind;
  const char* name;   // as printed: "onnx", "safetensors", "gguf"
  bool checkpoint;    // a checkpoint (tensors, no graph), read by a reader of src/checkpoint/
  // Recognisers, each null when the format is not recognised that way: a folder that holds the
  // format; a file by its name; a file by its first bytes (`data` holds kFormatHeadBytes of them,
  // `size` is the whole file's).
  bool (*in_folder)(const std::filesystem::path& folder);
  bool (*by_name)(const std::string& path);
  bool (*by_bytes)(const char* data, uint64_t size);
  // Opens a path (a file, or a folder in_folder recognised) as a Model.
  Model (*open)(const std::string& path, const LoadOptions& options);
  // Opens bytes in memory as a Model; null: the format is read from its file only.
  Model (*open_bytes)(const char* data, uint64_t size, const std::string& name, const LoadOptions& options);
  // Opens the file `name` of a folder of byte sources (a remote repo's, source.h) as a Model shown as
  // `shown`; what it names beside it (shards, parts, external data) is looked for in that folder.
  Model (*open_in)(const SourceFolder& folder, const std::string& name, const std::string& shown,
                   const LoadOptions& options);
};

// Every row. They are asked in order: GGUF's magic before the safetensors length (the first bytes
// of a GGUF v3 file of 123 tensors and 14 GB also read as a safetensors length, then '{'). ONNX,
// recognised by nothing, is what a path no other row recognises is read as: its loader says what
// is wrong with a file that is not a model.
const std::vector<FormatRow>& file_formats();
const FormatRow& format_row(FormatKind kind);

// The row a path is read by: a folder by the rows' in_folder, a file by its name, else by its first
// bytes (read as every reader opens a file: a FIFO or a device is not read here), else ONNX.
const FormatRow& format_of(const std::string& path);
// The row of a file of `size` bytes by its first bytes (at least kFormatHeadBytes at `data`), ONNX
// when no row recognises them.
const FormatRow& format_of_bytes(const char* data, uint64_t size);

}  // namespace headcount
