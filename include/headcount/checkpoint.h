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
#include <string>

#include "headcount/checkpoint_index.h"
#include "headcount/dtypes.h"

namespace headcount {

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

}  // namespace headcount
