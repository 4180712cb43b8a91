// checkpoint/model.cpp: a checkpoint's tensor index as a Model of weights without a graph, so that
// the stages after the reader (inventory, duplicates, composition, cost, rules, renderers) read
// it as they read an ONNX model's initializers.
#include "checkpoint/model.h"
#include "headcount/dtypes.h"

#include <onnx/onnx_pb.h>

namespace headcount {
namespace {

// The ONNX type of a checkpoint dtype, or kGgmlDtype + the GGUF type for a block-quantized one.
int32_t dtype_of(const Checkpoint& c, const std::string& d) {
  if (const CheckpointDtype* t = checkpoint_dtype(d); t && t->onnx != 0) return t->onnx;
  if (c.kind == FormatKind::Gguf) {
    for (uint32_t id = 0; id < 256; ++id) {
      const GgmlType* t = ggml_type(id);
      if (t && d == t->name) return kGgmlDtype + static_cast<int32_t>(id);
    }
  }
  return 0;  // F8_E8M0, F6: no ONNX type; counted by their bytes, never decoded
}

}  // namespace

Model checkpoint_model(Checkpoint checkpoint, const std::string& path) {
  Model m;
  m.path = path;
  auto c = std::make_shared<Checkpoint>(std::move(checkpoint));
  for (uint64_t s : c->file_sizes) m.file_size += s;
  m.graphs.emplace_back();  // the main scope: weights, no nodes
  m.value_index.reserve(c->tensors.size());
  // Each file with what its reader opened: the content comparison reads only from that file.
  std::vector<const PayloadFile*> files;
  for (size_t i = 0; i < c->files.size(); ++i) {
    FileIdentity id = i < c->file_ids.size() ? c->file_ids[i] : FileIdentity{};
    files.push_back(&*m.payload_files.insert(PayloadFile{c->files[i], id}).first);
  }
  m.weights.reserve(c->tensors.size());
  for (const CheckpointTensor& t : c->tensors) {
    Weight w;
    w.name = t.name;
    w.graph = 0;
    w.dtype = dtype_of(*c, t.dtype);
    w.dims = Span<int64_t>(t.shape.data(), t.shape.size());
    w.elements = t.elements;
    w.bytes = t.bytes;
    w.storage = Storage::Embedded;
    // Every stored tensor is counted in the stored total, integer ones too (I32, I64, a 0-d
    // num_batches_tracked): framework_view names those as buffers, so none is dropped unsaid.
    w.parameter = true;
    // The bytes can be read as values: a plain type, in the host's byte order (a big-endian
    // GGUF's values are not read, but for one-byte types).
    w.payload_known = w.dtype != 0 && w.dtype < kGgmlDtype && (!c->big_endian || t.bytes <= t.elements);
    w.payload_file = files[static_cast<size_t>(t.file)];
    w.payload_offset = t.offset;
    w.payload_length = t.bytes;
    const int id = m.value_index.intern(m.values, 0, w.name);
    m.values[static_cast<size_t>(id)].weight = static_cast<int>(m.weights.size());
    m.values[static_cast<size_t>(id)].def = id;
    m.weights.push_back(w);
  }
  m.checkpoint = std::move(c);
  return m;
}

}  // namespace headcount
