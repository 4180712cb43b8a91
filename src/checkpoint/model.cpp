// checkpoint/model.cpp: a checkpoint's tensor index as a Model of weights without a graph, so that
// the stages after the reader (inventory, duplicates, composition, cost, rules, renderers) read
// it as they read an ONNX model's initializers.
#include "checkpoint/model.h"

#include <onnx/onnx_pb.h>

namespace headcount {
namespace {

// The ONNX type of a checkpoint dtype, or kGgmlDtype + the GGUF type for a block-quantized one.
int32_t dtype_of(const Checkpoint& c, const std::string& d) {
  using T = onnx::TensorProto;
  static const std::pair<const char*, int32_t> table[] = {
      {"F32", T::FLOAT},   {"F16", T::FLOAT16}, {"BF16", T::BFLOAT16}, {"F64", T::DOUBLE},  {"I8", T::INT8},
      {"U8", T::UINT8},    {"I16", T::INT16},   {"U16", T::UINT16},    {"I32", T::INT32},   {"U32", T::UINT32},
      {"I64", T::INT64},   {"U64", T::UINT64},  {"BOOL", T::BOOL},     {"F8_E4M3", 17},     {"F8_E5M2", 19},
      {"F4", 23}};
  for (const auto& [name, type] : table) {
    if (d == name) return type;
  }
  if (c.format == "gguf") {
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
  std::vector<const std::string*> files;
  for (const std::string& f : c->files) files.push_back(&*m.payload_files.insert(f).first);
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
    // Floats and quantized weights are parameters; an F8_E8M0 or F6 tensor (a scale format) too.
    w.parameter = w.dtype == 0 ? true : dtype_is_parameter_type(w.dtype);
    w.payload_known = w.dtype != 0 && w.dtype < kGgmlDtype;  // the bytes can be read as values
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
