// headcount/load.h: read an .onnx file into a Model without reading its weight bytes.
//
// The reader walks the protobuf wire format with protobuf's CodedInputStream, parses the graph
// structure into ONNX's generated classes, and skips every large tensor payload by its length, so
// load time and memory do not grow with the weights. External data files are checked with stat
// only, after the location is proven to stay inside the model's folder.
#pragma once

#include <cstdint>
#include <string>

#include "headcount/model.h"

namespace headcount {

struct LoadOptions {
  // Payload fields up to this many bytes per tensor are kept (shape constants, scales); larger
  // payloads are skipped and only their position is recorded.
  uint64_t keep_payload_bytes = 4096;
  // Subgraphs (If/Loop/Scan bodies) nested deeper than this are refused.
  int max_graph_depth = 64;
  // The folder external data is resolved against, and may not leave; "" for the model file's own
  // folder (a model handed over as bytes is read from a private copy elsewhere).
  std::string base_dir;
};

// Loads a model file. Throws InputError (message without the file name) when it cannot.
Model load_model(const std::string& path, const LoadOptions& options = {});
// Loads a model from `size` bytes in memory, shown as `name`. Weight payloads are read from that
// buffer, which must outlive every read of them (the audit); external data is resolved against
// options.base_dir, which must be set.
Model load_model_bytes(const char* data, uint64_t size, const std::string& name, const LoadOptions& options);

}  // namespace headcount
