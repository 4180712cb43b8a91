// headcount/load.h: read an .onnx file into a Model without reading its weight bytes.
//
// The reader walks the protobuf wire format with protobuf's CodedInputStream, parses the graph
// structure into ONNX's generated classes, and skips every large tensor payload by its length, so
// load time and memory do not grow with the weights. External data files are checked with stat
// only, after the location is proven to stay inside the model's folder; a model read from a
// remote source has its external data looked up in its folder's listing, never fetched.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "headcount/model.h"

namespace headcount {

class ByteSource;  // source.h (internal): the bytes under every reader

// The files of a folder that is not on this machine (a remote repo's), as its host lists them:
// sizes by '/'-separated path relative to the model's folder. `listed` is false when the host
// gives no list (a plain URL's folder).
struct ListedFiles {
  bool listed = false;
  std::map<std::string, uint64_t> sizes;
};

struct LoadOptions {
  // What a tensor's payload keeps in memory; a payload past its limit is skipped by its length,
  // its place recorded. Typed fields (int64_data, float_data, ...) cannot be read again later, so
  // they are kept up to keep_payload_bytes. raw_data can: the content stage reads it again from
  // the file when it asks for values, so only what the shape stage reads is kept: int32 and int64
  // raw data up to keep_shape_bytes (it reads at most 64 elements of a value, 512 bytes of
  // int64s), raw data of other types up to keep_raw_bytes (a float vector of 16 elements: no
  // valid model uses a longer one as a shape). A source whose bytes cannot be read again (a
  // remote file) keeps up to keep_payload_bytes of every payload.
  uint64_t keep_payload_bytes = 4096;
  uint64_t keep_shape_bytes = 512;
  uint64_t keep_raw_bytes = 64;
  // Subgraphs (If/Loop/Scan bodies) nested deeper than this are refused.
  int max_graph_depth = 64;
  // The folder external data is resolved against, and may not leave; "" for the model file's own
  // folder (a model handed over as bytes is read from a private copy elsewhere).
  std::string base_dir;
  // Set for a model read from a remote source: the files of its folder, asked once, at its first
  // external tensor. Its external data is then checked against them (present, missing, too short;
  // "not checked" when the folder is not listed) and is never stat'ed here or fetched.
  std::function<const ListedFiles&()> listed_files;
};

// Loads a model file. Throws InputError (message without the file name) when it cannot.
Model load_model(const std::string& path, const LoadOptions& options = {});
// Loads a model from a byte source (internal: source.h), read as a file is: in growing blocks,
// payloads skipped. Its embedded payloads are not read later (the audit's content comparison);
// external data is checked against options.listed_files when set, else against base_dir.
Model load_model(const ByteSource& source, const LoadOptions& options);
// Loads a model from `size` bytes in memory, shown as `name`. Weight payloads are read from that
// buffer, which must outlive every read of them (the audit); external data is resolved against
// options.base_dir, which must be set.
Model load_model_bytes(const char* data, uint64_t size, const std::string& name, const LoadOptions& options);

}  // namespace headcount
