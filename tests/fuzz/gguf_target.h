// gguf_target.h: what every GGUF fuzz input goes through, shared by the fuzz_gguf harness and the
// corpus replay test of the normal build.
//
// The bytes are written to a GGUF file in the harness's private folder and read with read_gguf,
// once under a plain name and once as the only part of a split file (NAME-00001-of-00001.gguf).
// Each read either throws InputError (with a message) or returns a checkpoint whose invariants hold: every tensor
// inside its file and aligned, its element count the product of its shape, its byte count its
// type's blocks, no two tensors overlapping. Anything else (another exception, a broken
// invariant, a sanitizer report, an allocation above libFuzzer's limit) is a finding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_target.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"

namespace fuzz {

inline void check_checkpoint(const headcount::Checkpoint& c) {
  using headcount::CheckpointTensor;
  auto broken = [](const std::string& what) { fail("a GGUF checkpoint breaks an invariant", what); };
  if (c.format != "gguf" || c.files.empty() || c.files.size() != c.file_sizes.size()) broken("files");
  if (c.alignment == 0 || (c.alignment & (c.alignment - 1)) != 0) broken("alignment");
  std::vector<const CheckpointTensor*> stored;
  for (const auto& t : c.tensors) {
    const headcount::GgmlType* type = nullptr;
    for (uint32_t id = 0; id < 64 && !type; ++id) {
      const auto* candidate = headcount::ggml_type(id);
      if (candidate && t.dtype == candidate->name) type = candidate;
    }
    if (!type) broken(t.name + ": dtype " + t.dtype);
    if (t.file < 0 || static_cast<size_t>(t.file) >= c.files.size()) broken(t.name + ": file index");
    if (t.shape.size() > 8) broken(t.name + ": rank");
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (d < 0) broken(t.name + ": negative dim");
      elements = d == 0 || elements == 0 ? 0 : elements * static_cast<uint64_t>(d);  // checked by the reader
    }
    if (elements != t.elements || elements % type->block_elements != 0 ||
        elements / type->block_elements * type->block_bytes != t.bytes) {
      broken(t.name + ": element or byte count");
    }
    const uint64_t size = c.file_sizes[static_cast<size_t>(t.file)];
    if (t.offset > size || t.bytes > size - t.offset) broken(t.name + ": outside its file");
    if (t.bytes > 0) stored.push_back(&t);
  }
  std::sort(stored.begin(), stored.end(), [](const CheckpointTensor* a, const CheckpointTensor* b) {
    return a->file != b->file ? a->file < b->file : a->offset < b->offset;
  });
  for (size_t k = 1; k < stored.size(); ++k) {
    if (stored[k]->file == stored[k - 1]->file && stored[k]->offset < stored[k - 1]->offset + stored[k - 1]->bytes) {
      broken(stored[k - 1]->name + " and " + stored[k]->name + " overlap");
    }
  }
}

// Every GGUF fuzz input: read as a file and as a one-part split file.
inline void run_gguf(const uint8_t* data, size_t size) {
  const std::filesystem::path dir = std::filesystem::path(scratch_model()).parent_path();
  for (const char* name : {"model.gguf", "model-00001-of-00001.gguf"}) {
    const std::string path = (dir / name).string();
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
      check_checkpoint(headcount::read_gguf(path));
    } catch (const headcount::InputError& e) {
      if (std::string(e.what()).empty()) fail("a GGUF error without a message", path);
    }
    std::remove(path.c_str());
  }
}

}  // namespace fuzz
