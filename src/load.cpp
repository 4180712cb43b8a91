// load.cpp: the wire-level reader that parses an .onnx file into ONNX's classes while leaving
// large tensor payloads in the file, then indexes the graphs into a Model.
#include "headcount/load.h"

#include "paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>
#include <spdlog/spdlog.h>

#include "headcount/error.h"
#include "ops.h"
#include "source.h"
#include "payload.h"

namespace headcount {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

constexpr int kLengthDelimited = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
// Non-structural fields above this size (giant doc strings, unknown blobs) are skipped, not kept.
constexpr uint32_t kMaxLightField = 64u << 20;

// Field numbers from onnx.proto (ONNX 1.12 and later; numbers never change).
namespace field {
constexpr int kModelGraph = 7, kModelTrainingInfo = 20, kModelFunctions = 25;
constexpr int kGraphNode = 1, kGraphInitializer = 5, kGraphSparseInitializer = 15;
constexpr int kNodeInput = 1, kNodeOutput = 2, kNodeName = 3, kNodeOpType = 4, kNodeAttribute = 5, kNodeDomain = 7;
constexpr int kAttrName = 1, kAttrF = 2, kAttrI = 3, kAttrS = 4, kAttrFloats = 7, kAttrInts = 8, kAttrType = 20;
constexpr int kAttrT = 5, kAttrG = 6, kAttrTensors = 10, kAttrGraphs = 11, kAttrSparseTensor = 22,
              kAttrSparseTensors = 23;
constexpr int kFunctionNode = 7;
constexpr int kSparseValues = 1, kSparseIndices = 2;
constexpr int kTensorDims = 1, kTensorDataType = 2, kTensorName = 8, kTensorRawData = 9;
bool is_tensor_payload(int f) {  // float_data, int32_data, string_data, int64_data, raw_data, double_data, uint64_data
  return f == 4 || f == 5 || f == 6 || f == 7 || f == 9 || f == 10 || f == 11;
}
}  // namespace field

// Where a tensor's payload was, and whether it was left in the file.
struct PayloadInfo {
  bool stripped = false;
  int64_t raw_offset = -1;
  uint64_t raw_length = 0;
  uint64_t middle = 0;      // TensorRec::middle
  uint64_t head = 0;        // TensorRec::head
  uint8_t middle_size = 0;
  uint8_t head_size = 0;
};

// A copy of `v` in the arena.
template <typename T, typename Range>
Span<T> arena_copy(google::protobuf::Arena* arena, const Range& v) {
  static_assert(std::is_trivially_destructible_v<T> && alignof(T) <= 8, "arena bytes are 8-aligned and never destroyed");
  const size_t n = static_cast<size_t>(std::distance(v.begin(), v.end()));
  if (n == 0) return {};
  T* p = reinterpret_cast<T*>(google::protobuf::Arena::CreateArray<char>(arena, n * sizeof(T)));
  std::uninitialized_copy(v.begin(), v.end(), p);
  return Span<T>(p, n);
}

// Room for a string of `size` bytes in the arena, terminated.
char* arena_chars(google::protobuf::Arena* arena, size_t size) {
  char* p = google::protobuf::Arena::CreateArray<char>(arena, size + 1);
  p[size] = '\0';
  return p;
}

// A string copied into the arena.
std::string_view arena_string(google::protobuf::Arena* arena, const char* data, size_t size) {
  char* p = arena_chars(arena, size);
  if (size) std::memcpy(p, data, size);
  return {p, size};
}

// The record of a tensor protobuf has parsed (its payload stripped, or small and kept), and where
// its raw_data was in the file.
TensorRec* tensor_record(google::protobuf::Arena* arena, const onnx::TensorProto& t, const PayloadInfo& where) {
  TensorRec* r = google::protobuf::Arena::Create<TensorRec>(arena);
  r->name = arena_string(arena, t.name().data(), t.name().size());
  r->data_type = t.data_type();
  r->external = t.data_location() == onnx::TensorProto::EXTERNAL;
  r->dims = arena_copy<int64_t>(arena, t.dims());
  if (!t.raw_data().empty()) r->raw_data = arena_string(arena, t.raw_data().data(), t.raw_data().size());
  if (t.external_data_size() > 0 || t.int64_data_size() > 0 || t.int32_data_size() > 0 || t.float_data_size() > 0 ||
      t.double_data_size() > 0) {
    TensorRec::Rare* rare = google::protobuf::Arena::Create<TensorRec::Rare>(arena);
    std::vector<TensorRec::Entry> entries;
    for (const auto& kv : t.external_data()) {
      entries.emplace_back(arena_string(arena, kv.key().data(), kv.key().size()),
                           arena_string(arena, kv.value().data(), kv.value().size()));
    }
    rare->external_data = arena_copy<TensorRec::Entry>(arena, entries);
    rare->int64_data = arena_copy<int64_t>(arena, t.int64_data());
    rare->int32_data = arena_copy<int32_t>(arena, t.int32_data());
    rare->float_data = arena_copy<float>(arena, t.float_data());
    rare->double_data = arena_copy<double>(arena, t.double_data());
    r->rare = rare;
  }
  r->raw_offset = where.raw_offset;
  r->raw_length = where.raw_length;
  r->middle = where.middle;
  r->middle_size = where.middle_size;
  r->head = where.head;
  r->head_size = where.head_size;
  return r;
}

// One arena copy of each distinct name the nodes read or write: a value's name is stored once,
// not once per node that reads it. Open addressing under the keyed hash (a file cannot choose
// names that collide), at most half full; it lives while the file is read.
class NamePool {
 public:
  explicit NamePool(google::protobuf::Arena* arena) : arena_(arena) {}
  size_t size() const { return names_.size(); }
  // The pool's copy of `name` and its index (names are numbered in order of first use).
  std::pair<std::string_view, int32_t> intern(std::string_view name) {
    // A node mostly reads what the nodes just before it wrote: the names interned last are
    // compared first, without a hash (a bounded look, so no file makes it slow).
    for (int32_t k : recent_) {
      if (k >= 0 && names_[static_cast<size_t>(k)] == name) return {names_[static_cast<size_t>(k)], k};
    }
    auto found = intern_hashed(name);
    recent_[next_recent_++ % kRecent] = found.second;
    return found;
  }
  // Each name's keyed_hash(), by index: the indexer hashes no name a second time.
  std::vector<uint64_t> take_hashes() { return std::move(hashes_); }

 private:
  std::pair<std::string_view, int32_t> intern_hashed(std::string_view name) {
    if ((names_.size() + 1) * 2 > slots_.size()) grow();
    const uint64_t h = keyed_hash(name), mask = slots_.size() - 1;
    uint64_t i = h & mask;
    for (; slots_[i] != 0; i = (i + 1) & mask) {
      const uint32_t k = slots_[i] - 1;
      if (hashes_[k] == h && names_[k] == name) return {names_[k], static_cast<int32_t>(k)};
    }
    slots_[i] = static_cast<uint32_t>(names_.size() + 1);
    names_.push_back(arena_string(arena_, name.data(), name.size()));
    hashes_.push_back(h);
    return {names_.back(), static_cast<int32_t>(names_.size() - 1)};
  }
  static constexpr size_t kRecent = 4;
  int32_t recent_[kRecent] = {-1, -1, -1, -1};
  size_t next_recent_ = 0;
  void grow() {
    slots_.assign(std::max<size_t>(1024, slots_.size() * 2), 0);
    const uint64_t mask = slots_.size() - 1;
    for (size_t k = 0; k < names_.size(); ++k) {
      uint64_t i = hashes_[k] & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = static_cast<uint32_t>(k + 1);
    }
  }
  google::protobuf::Arena* arena_;
  std::vector<uint32_t> slots_;  // 1 + the name's index; 0 is an empty slot
  std::vector<std::string_view> names_;
  std::vector<uint64_t> hashes_;
};

// Walks the protobuf wire format. Nodes and their attributes become records of our own (the
// fields the stages read; the rest are skipped, checked to be well formed). Tensors are parsed
// by protobuf into a reused message, their large payloads skipped, and kept as records. The
// other fields of the model, graphs and functions are copied verbatim and handed to protobuf's
// own parser.
class WireReader {
 public:
  WireReader(CodedInputStream& in, uint64_t file_size, const LoadOptions& options, google::protobuf::Arena* arena)
      : in_(in), file_size_(file_size), options_(options), arena_(arena), names_(arena) {}

  uint64_t stripped_bytes = 0;
  // Upper bounds on the model's weights and nodes, and the node inputs and outputs read.
  size_t tensors_read = 0, nodes_read = 0, outputs_read = 0;
  size_t distinct_names() const { return names_.size(); }
  std::vector<uint64_t> take_name_hashes() { return names_.take_hashes(); }
  GraphBody* main = nullptr;             // the main graph's body, nullptr when the file has none
  std::vector<GraphBody*> functions;     // the bodies of the model's functions, in their order

  void read_model(onnx::ModelProto* m) {
    read_message(m, "ModelProto", [&](int f, int wt) {
      if (wt != kLengthDelimited) return false;
      if (f == field::kModelGraph) {  // a second graph field merges into the first, as protobuf does
        if (!main) main = new_body(m->mutable_graph());
        nested([&] { read_graph(main); }, "GraphProto");
        return true;
      }
      if (f == field::kModelFunctions) {
        onnx::FunctionProto* fn = m->add_functions();
        functions.push_back(new_body(nullptr));
        GraphBody* body = functions.back();
        nested([&] { read_function(fn, body); }, "FunctionProto");
        return true;
      }
      if (f == field::kModelTrainingInfo) {  // training graphs are not the model: skip unread
        uint32_t len = read_length("TrainingInfoProto");
        in_.Skip(static_cast<int>(len));
        return true;
      }
      return false;
    });
  }

 private:
  CodedInputStream& in_;
  uint64_t file_size_;
  const LoadOptions& options_;
  google::protobuf::Arena* arena_;  // the skeleton's: node records, their names and lists
  NamePool names_;                  // node inputs and outputs, each distinct name once
  std::string name_;                // the name being read
  std::array<const std::string_view*, 64> words_{};  // op types and domains read lately (read_word)
  int graph_depth_ = 0;

  // What one node's fields gather before its record is made; one per nesting depth, since an
  // attribute's subgraph holds nodes of its own.
  struct NodeScratch {
    std::vector<std::string_view> inputs, outputs;
    std::vector<int32_t> input_keys, output_keys;  // their indices in the name pool
    std::vector<Attribute> attributes;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::vector<const GraphBody*> graphs;
    Attribute::Rare rare;  // an attribute's rare fields while it is read
    onnx::TensorProto t;   // an attribute's tensor while it is read (a field given twice merges)
    bool has_t = false;
    PayloadInfo t_payload;
  };
  onnx::TensorProto tensor_;  // each initializer while it is read, then made a record
  std::vector<std::unique_ptr<NodeScratch>> scratch_;

  GraphBody* new_body(onnx::GraphProto* proto) {
    GraphBody* b = google::protobuf::Arena::Create<GraphBody>(arena_);
    b->proto = proto;
    return b;
  }

  template <typename T>
  Span<T> keep(const std::vector<T>& v) { return arena_copy<T>(arena_, v); }

  // A node's names in the arena, and after them in the same block their slots (NodeRec): each
  // name's index in the name pool, which the indexer replaces with the value id.
  Span<std::string_view> keep_names(const std::vector<std::string_view>& names, const std::vector<int32_t>& keys) {
    if (names.empty()) return {};
    char* block = google::protobuf::Arena::CreateArray<char>(arena_, NodeRec::names_block(names.size()));
    auto* p = reinterpret_cast<std::string_view*>(block);
    std::uninitialized_copy(names.begin(), names.end(), p);
    std::uninitialized_copy(keys.begin(), keys.end(), reinterpret_cast<int32_t*>(p + names.size()));
    return Span<std::string_view>(p, names.size());
  }

  [[noreturn]] void malformed() {
    throw InputError("not a valid ONNX model: malformed protobuf at byte " +
                     std::to_string(in_.CurrentPosition()));
  }

  // Reads a length prefix and proves the field fits in the file and in its enclosing message.
  uint32_t read_length(const char* what) {
    uint32_t len = 0;
    int64_t at = in_.CurrentPosition();
    if (!in_.ReadVarint32(&len)) {
      if (static_cast<uint64_t>(in_.CurrentPosition()) >= file_size_) truncated_at(at);
      malformed();
    }
    int64_t start = in_.CurrentPosition();
    if (static_cast<uint64_t>(start) + len > file_size_) {
      throw InputError(std::string("truncated: ") + what + " at byte " + std::to_string(start) +
                       " needs " + std::to_string(len) + " bytes but the file ends at byte " +
                       std::to_string(file_size_));
    }
    if (static_cast<int64_t>(len) > in_.BytesUntilLimit()) malformed();
    return len;
  }

  [[noreturn]] void truncated_at(int64_t at) {
    throw InputError("truncated at byte " + std::to_string(at) + " (the file ends at byte " +
                     std::to_string(file_size_) + ")");
  }

  // Reads one length-delimited child message with `read` inside its limit.
  template <typename F>
  void nested(F read, const char* what) {
    uint32_t len = read_length(what);
    auto limit = in_.PushLimit(static_cast<int>(len));
    read();
    in_.PopLimit(limit);
  }

  // Copies a non-structural field into `out` so protobuf's parser reads it later.
  void copy_field(uint32_t tag, CodedOutputStream& out) {
    if (WireFormatLite::GetTagWireType(tag) == kLengthDelimited) {
      uint32_t len = read_length("a field");
      if (len > kMaxLightField) {
        spdlog::warn("skipping field {} of {} bytes at byte {}", WireFormatLite::GetTagFieldNumber(tag),
                     len, in_.CurrentPosition());
        in_.Skip(static_cast<int>(len));
        return;
      }
      std::string bytes;
      if (!in_.ReadString(&bytes, static_cast<int>(len))) malformed();
      out.WriteTag(tag);
      out.WriteVarint32(len);
      out.WriteString(bytes);
      return;
    }
    int64_t at = in_.CurrentPosition();
    if (!WireFormatLite::SkipField(&in_, tag, &out)) {
      if (static_cast<uint64_t>(in_.CurrentPosition()) >= file_size_) truncated_at(at);
      malformed();
    }
  }

  // Skips a field the stages never read, proving it well formed and inside the file.
  void skip_field(uint32_t tag) {
    if (WireFormatLite::GetTagWireType(tag) == kLengthDelimited) {
      uint32_t len = read_length("a field");
      int64_t start = in_.CurrentPosition();
      if (!in_.Skip(static_cast<int>(len))) truncated_at(start);
      return;
    }
    int64_t at = in_.CurrentPosition();
    if (!WireFormatLite::SkipField(&in_, tag)) {
      if (static_cast<uint64_t>(in_.CurrentPosition()) >= file_size_) truncated_at(at);
      malformed();
    }
  }

  // The loop of a message read into a record of our own (a node, an attribute): the fields it
  // keeps go to `on_field`, the rest are skipped.
  template <typename F>
  void read_record(F on_field) {
    for (;;) {
      uint32_t tag = in_.ReadTag();
      if (tag == 0) break;
      if (on_field(WireFormatLite::GetTagFieldNumber(tag), WireFormatLite::GetTagWireType(tag))) continue;
      skip_field(tag);
    }
    if (in_.BytesUntilLimit() != 0) {
      if (static_cast<uint64_t>(in_.CurrentPosition()) >= file_size_) truncated_at(in_.CurrentPosition());
      malformed();
    }
  }

  // The loop every message shares: structural fields go to `on_field` (which returns true when it
  // consumed the field); the rest are gathered and parsed by protobuf into `msg`.
  // A message whose fields all went to `on_field` (most nodes and tensors) costs no second parse.
  template <typename Msg, typename F>
  void read_message(Msg* msg, const char* what, F on_field) {
    std::string light;
    {
      std::optional<StringOutputStream> sink;
      std::optional<CodedOutputStream> out;  // made at the first light field
      for (;;) {
        uint32_t tag = in_.ReadTag();
        if (tag == 0) break;
        int f = WireFormatLite::GetTagFieldNumber(tag);
        int wt = WireFormatLite::GetTagWireType(tag);
        if (on_field(f, wt)) continue;
        if (!out) {
          sink.emplace(&light);
          out.emplace(&*sink);
        }
        copy_field(tag, *out);
      }
    }
    if (in_.BytesUntilLimit() != 0) {
      if (static_cast<uint64_t>(in_.CurrentPosition()) >= file_size_) truncated_at(in_.CurrentPosition());
      malformed();
    }
    if (!light.empty() && !msg->MergeFromString(light)) {
      throw InputError(std::string("not a valid ONNX model: malformed ") + what + " before byte " +
                       std::to_string(in_.CurrentPosition()));
    }
  }

  void read_graph(GraphBody* body) {
    onnx::GraphProto* g = body->proto;
    if (++graph_depth_ > options_.max_graph_depth) {
      throw InputError("subgraphs are nested more than " + std::to_string(options_.max_graph_depth) +
                       " levels deep");
    }
    read_message(g, "GraphProto", [&](int f, int wt) {
      if (wt != kLengthDelimited) return false;
      switch (f) {
        case field::kGraphNode: nested([&] { read_node(body); }, "NodeProto"); return true;
        case field::kGraphInitializer:
          nested([&] {
            tensor_.Clear();
            PayloadInfo p = read_tensor(&tensor_);
            body->append(tensor_record(arena_, tensor_, p));
          }, "TensorProto");
          return true;
        case field::kGraphSparseInitializer:
          nested([&] { read_sparse(g->add_sparse_initializer()); }, "SparseTensorProto");
          return true;
        default: return false;
      }
    });
    --graph_depth_;
  }

  void read_function(onnx::FunctionProto* fn, GraphBody* body) {
    read_message(fn, "FunctionProto", [&](int f, int wt) {
      if (wt != kLengthDelimited || f != field::kFunctionNode) return false;
      nested([&] { read_node(body); }, "NodeProto");
      return true;
    });
  }

  // A string field read straight into the message: what protobuf's parser would store (onnx.proto
  // is proto2, so strings are bytes and are not checked as UTF-8).
  void read_string(std::string* out, const char* what) {
    uint32_t len = read_length(what);
    if (!in_.ReadString(out, static_cast<int>(len))) malformed();
  }

  // A string field's bytes: a view of the reader's window when it holds them all (no copy), else
  // a copy in name_. The view lasts until the next read.
  std::string_view read_bytes(const char* what) {
    const uint32_t len = read_length(what);
    const void* data = nullptr;
    int size = 0;
    in_.GetDirectBufferPointerInline(&data, &size);
    if (data != nullptr && size >= 0 && static_cast<uint32_t>(size) >= len) {
      in_.Skip(static_cast<int>(len));  // inside the window: moves past the bytes, reads nothing
      return {static_cast<const char*>(data), len};
    }
    if (!in_.ReadString(&name_, static_cast<int>(len))) malformed();
    return name_;
  }

  // A string field read straight into the arena, as a view.
  std::string_view read_view(const char* what) {
    uint32_t len = read_length(what);
    char* p = arena_chars(arena_, len);
    if (!in_.ReadRaw(p, static_cast<int>(len))) malformed();
    return {p, len};
  }

  // A value name, held once however many nodes name it.
  // Its index in the pool goes to `keys`.
  std::string_view read_name(const char* what, std::vector<int32_t>& keys) {
    auto [view, key] = names_.intern(read_bytes(what));
    keys.push_back(key);
    return view;
  }

  // A node's name. Exporters name a node's outputs after it (torch: the name, then "_output_0"),
  // so a name that begins the node's first output, read before it, is a view of that output's
  // name in the pool, not a copy of its own.
  std::string_view read_node_name(const std::vector<std::string_view>& outputs) {
    const std::string_view name = read_bytes("a node name");
    if (!outputs.empty() && outputs[0].substr(0, name.size()) == name) return outputs[0].substr(0, name.size());
    return arena_string(arena_, name.data(), name.size());
  }

  // An op type or a domain: a graph has a few distinct ones over all its nodes, so each is held
  // once and every stage that compares a node's op type reads the same, cache-warm characters.
  // A small direct-mapped cache, not a table that grows: a file of many distinct op types only
  // makes a copy per node, as any string field does.
  static constexpr std::string_view kNoWord{};  // a node's op type or domain when the file gives none

  // The word is a view in the arena that nodes point to (NodeRec keeps a pointer, not a view).
  const std::string_view* read_word(const char* what) {
    const std::string_view word = read_bytes(what);
    uint64_t h = word.size();
    for (char c : word) h = h * 31 + static_cast<unsigned char>(c);
    const std::string_view*& slot = words_[h % words_.size()];
    if (slot == nullptr || *slot != word) {
      slot = google::protobuf::Arena::Create<std::string_view>(arena_, arena_string(arena_, word.data(), word.size()));
    }
    return slot;
  }

  NodeScratch& scratch() {
    const size_t depth = static_cast<size_t>(graph_depth_);
    while (scratch_.size() <= depth) scratch_.push_back(std::make_unique<NodeScratch>());
    NodeScratch& s = *scratch_[depth];
    return s;
  }

  // A node becomes a record in the arena; repeated fields are appended and a scalar field given
  // twice keeps the last value, as protobuf's parser would have it.
  void read_node(GraphBody* body) {
    NodeScratch& s = scratch();
    s.inputs.clear();
    s.outputs.clear();
    s.input_keys.clear();
    s.output_keys.clear();
    s.attributes.clear();
    const std::string_view* op_type = &kNoWord;
    const std::string_view* domain = &kNoWord;
    std::string_view name;
    read_record([&](int f, int wt) {
      if (wt != kLengthDelimited) return false;
      switch (f) {
        case field::kNodeInput: s.inputs.push_back(read_name("a node input", s.input_keys)); return true;
        case field::kNodeOutput: s.outputs.push_back(read_name("a node output", s.output_keys)); return true;
        case field::kNodeName: name = read_node_name(s.outputs); return true;
        case field::kNodeOpType: op_type = read_word("an op type"); return true;
        case field::kNodeDomain: domain = read_word("a domain"); return true;
        case field::kNodeAttribute: {
          Attribute a;
          nested([&] { read_attribute(a, s); }, "AttributeProto");
          s.attributes.push_back(a);
          return true;
        }
        default: return false;
      }
    });
    ++nodes_read;
    outputs_read += s.outputs.size();
    const size_t inputs = s.inputs.size();
    s.inputs.insert(s.inputs.end(), s.outputs.begin(), s.outputs.end());
    s.input_keys.insert(s.input_keys.end(), s.output_keys.begin(), s.output_keys.end());
    body->append(google::protobuf::Arena::Create<NodeRec>(arena_, op_type, domain, name,
                                                          keep_names(s.inputs, s.input_keys), inputs,
                                                          keep(s.attributes)));
  }

  // The common attribute fields (name, type, i, f, s, ints, floats), as protobuf's parser would
  // store them.
  bool read_attribute_field(Attribute& a, NodeScratch& s, int f, int wt) {
    constexpr int kVarint = WireFormatLite::WIRETYPE_VARINT, kFixed32 = WireFormatLite::WIRETYPE_FIXED32;
    auto varint = [&] {
      uint64_t v = 0;
      if (!in_.ReadVarint64(&v)) malformed();
      return v;
    };
    auto fixed_float = [&] {
      uint32_t bits = 0;
      if (!in_.ReadLittleEndian32(&bits)) malformed();
      float v;
      std::memcpy(&v, &bits, sizeof v);
      return v;
    };
    switch (f) {
      case field::kAttrName:
        if (wt != kLengthDelimited) return false;
        a.name = read_view("an attribute name");
        return true;
      case field::kAttrS:
        if (wt != kLengthDelimited) return false;
        s.rare.s = read_view("an attribute string");
        return true;
      case field::kAttrI:
        if (wt != kVarint) return false;
        a.i = static_cast<int64_t>(varint());
        a.has_i = true;
        return true;
      case field::kAttrF:
        if (wt != kFixed32) return false;
        a.f = fixed_float();
        return true;
      case field::kAttrType: {
        if (wt != kVarint) return false;
        // An enum: a number onnx.proto does not define leaves the type unset, as protobuf keeps it.
        uint64_t v = varint();
        if (onnx::AttributeProto_AttributeType_IsValid(static_cast<int>(static_cast<int32_t>(v)))) {
          a.type = static_cast<int32_t>(v);
        }
        return true;
      }
      case field::kAttrInts:
        if (wt == kVarint) {
          s.ints.push_back(static_cast<int64_t>(varint()));
          return true;
        }
        if (wt != kLengthDelimited) return false;
        nested([&] {
          while (in_.BytesUntilLimit() > 0) s.ints.push_back(static_cast<int64_t>(varint()));
        }, "attribute ints");
        return true;
      case field::kAttrFloats:
        if (wt == kFixed32) {
          s.floats.push_back(fixed_float());
          return true;
        }
        if (wt != kLengthDelimited) return false;
        nested([&] {
          while (in_.BytesUntilLimit() > 0) s.floats.push_back(fixed_float());
        }, "attribute floats");
        return true;
      default:
        return false;
    }
  }

  template <typename Msg>
  Msg* message(const Msg* existing) {  // a message field given twice merges into the first
    return existing ? const_cast<Msg*>(existing) : google::protobuf::Arena::CreateMessage<Msg>(arena_);
  }

  void read_attribute(Attribute& a, NodeScratch& s) {
    s.ints.clear();
    s.floats.clear();
    s.graphs.clear();
    s.has_t = false;
    s.rare = Attribute::Rare();
    read_record([&](int f, int wt) {
      if (read_attribute_field(a, s, f, wt)) return true;
      if (wt != kLengthDelimited) return false;
      switch (f) {
        case field::kAttrT:
          if (!s.has_t) s.t.Clear();
          s.has_t = true;
          nested([&] { s.t_payload = read_tensor(&s.t); }, "TensorProto");
          return true;
        case field::kAttrTensors:  // read and checked, but no stage reads them
          nested([&] {
            tensor_.Clear();
            read_tensor(&tensor_);
          }, "TensorProto");
          return true;
        case field::kAttrG: {
          GraphBody* g = const_cast<GraphBody*>(s.rare.g);
          if (!g) g = new_body(google::protobuf::Arena::CreateMessage<onnx::GraphProto>(arena_));
          s.rare.g = g;
          nested([&] { read_graph(g); }, "GraphProto");
          return true;
        }
        case field::kAttrGraphs: {
          GraphBody* g = new_body(google::protobuf::Arena::CreateMessage<onnx::GraphProto>(arena_));
          nested([&] { read_graph(g); }, "GraphProto");
          s.graphs.push_back(g);
          return true;
        }
        case field::kAttrSparseTensor: {
          onnx::SparseTensorProto* t = message(s.rare.sparse_tensor);
          s.rare.sparse_tensor = t;
          nested([&] { read_sparse(t); }, "SparseTensorProto");
          return true;
        }
        case field::kAttrSparseTensors: {
          onnx::SparseTensorProto* t = google::protobuf::Arena::CreateMessage<onnx::SparseTensorProto>(arena_);
          nested([&] { read_sparse(t); }, "SparseTensorProto");
          return true;
        }
        default: return false;
      }
    });
    a.ints = keep(s.ints);
    if (!s.rare.s.empty() || s.rare.sparse_tensor || s.rare.g || !s.floats.empty() || !s.graphs.empty()) {
      Attribute::Rare* rare = google::protobuf::Arena::Create<Attribute::Rare>(arena_, s.rare);
      rare->floats = keep(s.floats);
      rare->graphs = keep(s.graphs);
      a.rare = rare;
    }
    if (s.has_t) a.t = tensor_record(arena_, s.t, s.t_payload);
  }

  void read_sparse(onnx::SparseTensorProto* s) {
    read_message(s, "SparseTensorProto", [&](int f, int wt) {
      if (wt != kLengthDelimited) return false;
      if (f == field::kSparseValues) { nested([&] { read_tensor(s->mutable_values()); }, "TensorProto"); return true; }
      if (f == field::kSparseIndices) { nested([&] { read_tensor(s->mutable_indices()); }, "TensorProto"); return true; }
      return false;
    });
  }

  // Whether raw data of this type may be a shape: int32 and int64 (and a type not read yet).
  static bool shape_type(int32_t dtype) {
    return dtype == onnx::TensorProto::INT64 || dtype == onnx::TensorProto::INT32 || dtype == 0;
  }

  // The most raw data of this type that is kept (LoadOptions). A type not read yet is taken as a
  // shape's; the check after the message is read applies the type's limit.
  uint64_t raw_limit(int32_t dtype) const {
    return std::min(options_.keep_payload_bytes, shape_type(dtype) ? options_.keep_shape_bytes : options_.keep_raw_bytes);
  }

  // Payload fields are kept while they are small (shape constants, scales: LoadOptions says how
  // small); past that the tensor's payload is skipped by its length and only its place recorded.
  PayloadInfo read_tensor(onnx::TensorProto* t) {
    PayloadInfo info;
    uint64_t kept = 0;
    read_message(t, "TensorProto", [&](int f, int wt) {
      if (f == field::kTensorName && wt == kLengthDelimited) {
        read_string(t->mutable_name(), "a tensor name");
        return true;
      }
      if (f == field::kTensorDataType && wt == WireFormatLite::WIRETYPE_VARINT) {
        uint32_t v = 0;  // an int32 field: protobuf keeps the low 32 bits of the varint
        if (!in_.ReadVarint32(&v)) malformed();
        t->set_data_type(static_cast<int32_t>(v));
        return true;
      }
      if (f == field::kTensorDims && wt == WireFormatLite::WIRETYPE_VARINT) {
        uint64_t v = 0;
        if (!in_.ReadVarint64(&v)) malformed();
        t->add_dims(static_cast<int64_t>(v));
        return true;
      }
      if (f == field::kTensorDims && wt == kLengthDelimited) {  // packed
        nested([&] {
          while (in_.BytesUntilLimit() > 0) {
            uint64_t v = 0;
            if (!in_.ReadVarint64(&v)) malformed();
            t->add_dims(static_cast<int64_t>(v));
          }
        }, "tensor dims");
        return true;
      }
      if (!field::is_tensor_payload(f)) return false;
      if (wt == kLengthDelimited) {
        read_payload_field(t, f, info, kept);
        return true;
      }
      // An unpacked element of a typed field: at most 8 bytes each.
      if (!info.stripped && kept + 8 <= options_.keep_payload_bytes) {
        kept += 8;
        return false;
      }
      info.stripped = true;
      int64_t at = in_.CurrentPosition();
      if (!WireFormatLite::SkipField(&in_, WireFormatLite::MakeTag(f, static_cast<WireFormatLite::WireType>(wt)))) {
        truncated_at(at);
      }
      return true;
    });
    // Raw data read before its type (fields out of the usual order), past the type's limit.
    if (!info.stripped && info.raw_offset >= 0 && info.raw_length > raw_limit(t->data_type())) {
      info.stripped = true;
      stripped_bytes += info.raw_length;
    }
    if (info.stripped) {
      t->clear_raw_data();
      t->clear_float_data();
      t->clear_int32_data();
      t->clear_string_data();
      t->clear_int64_data();
      t->clear_double_data();
      t->clear_uint64_data();
    }
    ++tensors_read;
    return info;
  }

  // One length-delimited payload field (raw_data, or a packed typed field): kept while the tensor's
  // kept bytes stay within its limit, else skipped by its length, its place recorded in `info`.
  void read_payload_field(onnx::TensorProto* t, int f, PayloadInfo& info, uint64_t& kept) {
    const uint32_t len = read_length(f == field::kTensorRawData ? "tensor data" : "a TensorProto data field");
    const int64_t start = in_.CurrentPosition();
    if (f == field::kTensorRawData) {
      info.raw_offset = start;
      info.raw_length = len;
      info.middle_size = 0;
      info.head_size = 0;
    }
    const uint64_t keep = f == field::kTensorRawData ? raw_limit(t->data_type()) : options_.keep_payload_bytes;
    if (!info.stripped && kept + len <= keep) {
      // Too small to skip: rewind-free copy into the message's own bytes.
      kept += len;
      std::string bytes;
      if (!in_.ReadString(&bytes, static_cast<int>(len))) malformed();
      if (f == field::kTensorRawData) t->set_raw_data(std::move(bytes));  // bytes as they are: no parse
      else keep_payload(t, f, bytes);
      return;
    }
    info.stripped = true;
    stripped_bytes += len;
    if (f == field::kTensorRawData) {
      sample_middle(*t, len, &info);
      sample_head(len, &info);
    }
    if (!in_.Skip(static_cast<int>(len))) truncated_at(start);
  }

  // The middle element of a raw payload about to be skipped (in the canonical orientation), when
  // the reader's window already holds it: the content comparison reads that element of every
  // candidate first (duplicates.cpp), and here it costs no read. Only for a payload of 1,024
  // elements or more, whose type and dims came before it and agree with its length.
  void sample_middle(const onnx::TensorProto& t, uint32_t len, PayloadInfo* info) {
    const int bits = dtype_bits(t.data_type());
    if (bits < 8 || bits > 64 || bits % 8 != 0) return;
    const uint64_t es = static_cast<uint64_t>(bits / 8);
    uint64_t elements = 1, bytes = 0;
    for (int64_t d : t.dims()) {
      if (d < 0 || mul_overflows(elements, static_cast<uint64_t>(d), &elements)) return;
    }
    if (elements < 1024 || mul_overflows(elements, es, &bytes) || bytes != len) return;
    const uint64_t at = canonical_position(Span<int64_t>(t.dims().data(), static_cast<size_t>(t.dims_size())), elements,
                                           elements / 2) * es;
    const void* data = nullptr;
    int size = 0;
    in_.GetDirectBufferPointerInline(&data, &size);  // what the window holds from here: never a read
    if (data == nullptr || size < 0 || at + es > static_cast<uint64_t>(size)) return;
    std::memcpy(&info->middle, static_cast<const char*>(data) + at, static_cast<size_t>(es));
    info->middle_size = static_cast<uint8_t>(es);
  }

  // The first bytes of a raw payload about to be skipped, when the reader's window holds them
  // (never a read): most value checks decide on the first element (buffers.cpp).
  void sample_head(uint32_t len, PayloadInfo* info) {
    const void* data = nullptr;
    int size = 0;
    in_.GetDirectBufferPointerInline(&data, &size);
    const uint64_t n = std::min<uint64_t>({sizeof info->head, len, size > 0 ? static_cast<uint64_t>(size) : 0});
    if (data == nullptr || n == 0) return;
    std::memcpy(&info->head, data, static_cast<size_t>(n));
    info->head_size = static_cast<uint8_t>(n);
  }

  // Parses a kept length-delimited payload field into the tensor through protobuf itself.
  static void keep_payload(onnx::TensorProto* t, int f, const std::string& bytes) {
    std::string wire;
    {
      StringOutputStream sink(&wire);
      CodedOutputStream out(&sink);
      out.WriteTag(WireFormatLite::MakeTag(f, WireFormatLite::WIRETYPE_LENGTH_DELIMITED));
      out.WriteVarint32(static_cast<uint32_t>(bytes.size()));
      out.WriteString(bytes);
    }
    if (!t->MergeFromString(wire)) {
      throw InputError("not a valid ONNX model: malformed tensor data field");
    }
  }
};

// ---------------------------------------------------------------------------------------------
// Indexing: from the skeleton to Model's graphs, nodes and weights.

class Indexer {
 public:
  // `name_hashes`: the keyed_hash() of each name in the reader's pool, by the index the node
  // slots hold.
  Indexer(Model& model, const LoadOptions& options, std::vector<uint64_t> name_hashes, const char* memory = nullptr)
      : m_(model), memory_(memory), base_dir_(options.base_dir), listed_files_(options.listed_files),
        readable_(memory != nullptr || !model.payload_files.empty()), name_hashes_(std::move(name_hashes)),
        first_value_(name_hashes_.size(), -1) {}

  void run(const GraphBody& main, const std::vector<GraphBody*>& functions) {
    const onnx::ModelProto& mp = *m_.proto;
    add_graph(main, -1);
    for (int f = 0; f < mp.functions_size(); ++f) {
      const onnx::FunctionProto& fn = mp.functions(f);
      int gi = new_graph(-1);
      m_.graphs[gi].function = (fn.domain().empty() ? std::string() : fn.domain() + ".") + fn.name();
      for (const NodeRec* n = functions[static_cast<size_t>(f)]->first; n; n = n->next()) add_node(*n, gi);
    }
    last_reader_.assign(m_.weights.size(), -1);
    for (size_t gi = 0; gi < m_.graphs.size(); ++gi) index_graph(static_cast<int>(gi));
    resolve_definitions();
    list_consumers();
    mark_quantized_parameters();
  }

 private:
  Model& m_;
  const char* memory_ = nullptr;  // the model's bytes when it was loaded from memory
  const std::string& base_dir_;
  const std::function<const ListedFiles&()>& listed_files_;  // set for a model of a remote folder
  const bool readable_;  // whether the embedded payloads can be read later (a local file, memory)
  std::optional<std::filesystem::path> root_;  // the model's folder, resolved at the first external tensor

  const std::filesystem::path& root() {
    if (!root_) {
      std::error_code ec;
      std::filesystem::path dir = base_dir_.empty() ? std::filesystem::absolute(m_.path, ec).parent_path()
                                                    : std::filesystem::absolute(base_dir_, ec);
      root_ = std::filesystem::weakly_canonical(dir, ec);
      if (ec) root_ = dir;
    }
    return *root_;
  }
  std::vector<std::vector<int>> raw_nodes_;  // per graph, nodes in file order
  std::vector<int> packed_readers_;          // the MatMulNBits and QMoE nodes, which unpack weights
  std::vector<int> dequantizers_;            // the DequantizeLinear nodes
  std::vector<uint64_t> name_hashes_;        // by pool index
  std::vector<int32_t> first_value_;         // by pool index: the value the first scope to use the name made
  const PayloadFile* model_file_ = nullptr;  // the model file's record, once an embedded payload asks
  std::map<std::string, FileIdentity> stat_cache_;  // resolved path -> what a stat found (known: a regular file)

  // The model's one record of a payload file: its name, and the file the loader found there (the
  // model file's was recorded when it was opened).
  const PayloadFile* payload_file(const std::string& path, const FileIdentity& id = {}) {
    auto it = m_.payload_files.find(path);  // looked up first: a record is made (its path copied) once
    if (it != m_.payload_files.end()) return &*it;
    return &*m_.payload_files.insert(PayloadFile{path, id}).first;
  }

  int new_graph(int parent) {
    Graph g;
    g.parent = parent;
    m_.graphs.push_back(std::move(g));
    raw_nodes_.emplace_back();
    return static_cast<int>(m_.graphs.size()) - 1;
  }

  int add_graph(const GraphBody& body, int parent, int owner = -1, std::string_view attribute = {},
                int list_index = -1) {
    const onnx::GraphProto& gp = *body.proto;
    int gi = new_graph(parent);
    m_.graphs[gi].owner = owner;
    m_.graphs[gi].attribute = attribute;
    m_.graphs[gi].list_index = list_index;
    for (const TensorRec* t = body.first_initializer; t; t = t->next) {
      add_weight(*t, gi, t->name, t->external ? Storage::External : Storage::Embedded);
    }
    for (const auto& s : gp.sparse_initializer()) add_sparse(s, gi, s.values().name(), Storage::Embedded);
    for (const NodeRec* n = body.first; n; n = n->next()) add_node(*n, gi);
    return gi;
  }

  void add_node(const NodeRec& n, int gi) {
    int ni = static_cast<int>(m_.nodes.size());
    m_.nodes.push_back(Node{&n, gi});
    raw_nodes_[gi].push_back(ni);
    bool is_constant = n.op_type() == "Constant"sv && (n.domain().empty() || n.domain() == "ai.onnx"sv);
    const uint64_t traits = op_traits(n.op_type());
    m_.op_traits |= traits;
    if (traits & static_cast<uint64_t>(Trait::PackedWeights)) packed_readers_.push_back(ni);
    if (n.op_type() == "DequantizeLinear"sv) dequantizers_.push_back(ni);
    for (const Attribute& a : n.attribute()) {
      if (is_constant && n.output_size() > 0) add_constant_attribute(a, gi, n.output(0));
      if (a.g()) add_graph(*a.g(), gi, ni, a.name);
      for (size_t i = 0; i < a.graphs().size(); ++i) add_graph(*a.graphs()[i], gi, ni, a.name, static_cast<int>(i));
    }
  }

  // A Constant's value: tensor, sparse tensor or float list. Scalars and integer types are shape
  // and index data, not parameters (docs/counting.md: "What counts as a parameter").
  void add_constant_attribute(const Attribute& a, int gi, std::string_view out) {
    if (a.name == "value"sv && a.t) {
      int wi = add_weight(*a.t, gi, out, Storage::ConstantNode);
      Weight& w = m_.weights[wi];
      if (w.dims.empty()) w.parameter = false;
    } else if (a.name == "sparse_value"sv && a.sparse_tensor()) {
      int wi = add_sparse(*a.sparse_tensor(), gi, out, Storage::ConstantNode);
      if (m_.weights[wi].dims.empty()) m_.weights[wi].parameter = false;
    } else if (a.name == "value_floats"sv && !a.floats().empty()) {
      Weight w;
      w.name = out;
      w.graph = gi;
      w.dtype = onnx::TensorProto::FLOAT;
      const int64_t length = static_cast<int64_t>(a.floats().size());
      w.dims = arena_copy<int64_t>(m_.proto.arena(), std::vector<int64_t>{length});
      w.elements = static_cast<uint64_t>(a.floats().size());
      w.bytes = w.elements * 4;
      w.storage = Storage::ConstantNode;
      w.parameter = true;
      register_weight(std::move(w), out);
    }
  }

  template <typename Dims>
  static uint64_t elements_of(std::string_view name, const Dims& dims) {
    uint64_t n = 1;
    for (int64_t d : dims) {
      if (d < 0) {
        throw InputError("tensor '" + std::string(name) + "' has a negative dimension (" + std::to_string(d) + ")");
      }
      if (mul_overflows(n, static_cast<uint64_t>(d), &n)) {
        throw InputError("tensor '" + std::string(name) + "': the element count of its shape overflows 64 bits");
      }
    }
    return n;
  }

  // Bytes per whole group of 8 elements (= bits), then the rest rounded up: elements * bits
  // would overflow for sizes whose byte count still fits in 64 bits.
  static uint64_t bytes_of(std::string_view name, int32_t dtype, uint64_t elements) {
    uint64_t bits = static_cast<uint64_t>(dtype_bits(dtype)), whole = 0, total = 0;
    if (mul_overflows(elements / 8, bits, &whole) || add_overflows(whole, (elements % 8 * bits + 7) / 8, &total)) {
      throw InputError("tensor '" + std::string(name) + "': its size in bytes overflows 64 bits");
    }
    return total;
  }

  // `key` is the name as the skeleton holds it: the graph's index views it, not a copy.
  int register_weight(Weight w, std::string_view key) {
    int wi = static_cast<int>(m_.weights.size());
    const int id = m_.value_index.intern(m_.values, w.graph, key);
    m_.values[static_cast<size_t>(id)].weight = wi;
    m_.weights.push_back(std::move(w));
    return wi;
  }

  int add_weight(const TensorRec& t, int gi, std::string_view name, Storage storage) {
    Weight w;
    w.name = name;
    w.graph = gi;
    w.dtype = t.data_type;
    w.dims = t.dims;
    w.elements = elements_of(name, t.dims);
    w.bytes = bytes_of(name, w.dtype, w.elements);
    w.storage = storage;
    w.parameter = dtype_is_parameter_type(w.dtype);
    w.tensor = &t;
    if (t.external) {
      w.storage = storage == Storage::ConstantNode ? Storage::ConstantNode : Storage::External;
      check_external(t, w);
    } else {
      if (t.raw_offset >= 0) {
        if (t.raw_length != w.bytes && dtype_bits(w.dtype) > 0) {
          throw InputError("tensor '" + std::string(name) + "' declares " + std::to_string(w.bytes) +
                           " bytes of data by its shape but holds " + std::to_string(t.raw_length));
        }
        w.payload_known = readable_;
        if (memory_) w.payload_memory = memory_ + t.raw_offset;
        else w.payload_file = model_file_ ? model_file_ : (model_file_ = payload_file(m_.path));
        w.payload_offset = static_cast<uint64_t>(t.raw_offset);
        w.payload_length = t.raw_length;
      }
    }
    return register_weight(std::move(w), name);
  }

  int add_sparse(const onnx::SparseTensorProto& s, int gi, std::string_view name, Storage storage) {
    Weight w;
    w.name = name;
    w.graph = gi;
    w.dtype = s.values().data_type();
    w.dims = Span<int64_t>(s.dims().data(), static_cast<size_t>(s.dims().size()));
    w.elements = elements_of(name, s.dims());
    uint64_t nnz_values = elements_of(name, s.values().dims());
    uint64_t nnz_indices = elements_of(name, s.indices().dims());
    uint64_t a = bytes_of(name, w.dtype, nnz_values), b = bytes_of(name, s.indices().data_type(), nnz_indices);
    if (add_overflows(a, b, &w.bytes)) throw InputError("tensor '" + std::string(name) + "': its size in bytes overflows 64 bits");
    w.storage = storage;
    w.sparse = true;
    w.parameter = dtype_is_parameter_type(w.dtype);
    w.tensor = tensor_record(m_.proto.arena(), s.values(), PayloadInfo());
    return register_weight(std::move(w), name);
  }

  // Proves an external location stays inside the model's folder (paths.h).
  std::filesystem::path resolve_inside(const std::string& name, const std::string& location) {
    std::string why;
    std::filesystem::path path = headcount::resolve_inside(root().native(), location, &why);
    if (!why.empty()) refuse_location(name, location, why);
    return path;
  }

  [[noreturn]] static void refuse_location(std::string_view name, std::string_view location, const std::string& why) {
    std::string shown;  // control bytes from a hostile file are not written to the terminal
    for (char c : location) shown += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    throw InputError("tensor '" + std::string(name) + "': external data location '" + shown + "' " + why +
                     "; refused, it must stay inside the model's folder");
  }

  void check_external(const TensorRec& t, Weight& w) {
    auto* x = google::protobuf::Arena::Create<Weight::External>(m_.proto.arena());
    w.external = x;
    for (const TensorRec::Entry& entry : t.external_data()) {
      const std::string_view key = entry.first, value = entry.second;  // (a lambda cannot capture a binding in C++17)
      auto number = [&](const std::string& what) -> uint64_t {
        uint64_t v = 0;
        const std::string s(value);
        auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
          throw InputError("tensor '" + std::string(w.name) + "': external data " + what + " '" + s + "' is not a number");
        }
        return v;
      };
      if (key == "location"sv) x->location = value;
      else if (key == "offset"sv) x->offset = number("offset");
      else if (key == "length"sv) x->length = static_cast<int64_t>(std::min<uint64_t>(number("length"), INT64_MAX));
    }
    uint64_t length = x->length >= 0 ? static_cast<uint64_t>(x->length) : w.bytes;
    if (x->location.empty()) throw InputError("tensor '" + std::string(w.name) + "': external data has no location");
    if (listed_files_) return check_listed(w, *x, length);
    std::filesystem::path file = resolve_inside(std::string(w.name), std::string(x->location));
    auto it = stat_cache_.find(file.string());
    if (it == stat_cache_.end()) {
      // A stat never blocks (a FIFO is only refused here); the bytes are read later through
      // reopen_regular (paths.h), which reads them only from the file found now.
      struct stat st;
      FileIdentity id;
      if (stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        id = {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size), true};
      }
      it = stat_cache_.emplace(file.string(), id).first;
    }
    const FileIdentity& found = it->second;
    x->status = found.known ? status_in(w, *x, length, found.size) : ExternalStatus::Missing;
    if (found.known) x->file_size = found.size;
    if (x->status == ExternalStatus::Present) {
      w.payload_known = true;
      w.payload_file = payload_file(file.string(), found);
      w.payload_offset = x->offset;
      w.payload_length = length;
    }
  }

  // External data of a model whose folder is not on this machine: its location checked without
  // touching a file, then looked up in the folder's listing (nothing is stat'ed or fetched).
  void check_listed(const Weight& w, Weight::External& x, uint64_t length) {
    std::string why;
    std::string path = relative_inside(std::string(x.location), &why);
    if (!why.empty()) refuse_location(w.name, x.location, why);
    const ListedFiles& listed = listed_files_();
    auto found = listed.sizes.find(path);
    if (!listed.listed) {
      x.status = ExternalStatus::NotChecked;
    } else if (found == listed.sizes.end()) {
      x.status = ExternalStatus::Missing;
    } else {
      x.status = status_in(w, x, length, found->second);
      x.file_size = found->second;
    }
  }

  // The status of an external range in a data file of `size` bytes, found on disk or in a listing:
  // present when its length is the shape's and it ends inside the file, else too short.
  static ExternalStatus status_in(const Weight& w, const Weight::External& x, uint64_t length, uint64_t size) {
    uint64_t end = 0;
    bool fits = length == w.bytes && !add_overflows(x.offset, length, &end) && end <= size;
    return fits ? ExternalStatus::Present : ExternalStatus::SizeMismatch;
  }

  // Integer tensors that feed DequantizeLinear as data are quantized weights (int32 biases of QDQ
  // models), not shape data.
  void mark_quantized_parameters() {
    // MatMulNBits packs n-bit weights into uint8 blobs: the parameters are K x N from its
    // attributes, not the stored bytes.
    for (int ni : packed_readers_) {
      const Node& node = m_.nodes[static_cast<size_t>(ni)];
      const auto& n = *node.rec;
      if (n.op_type() != "MatMulNBits"sv || n.input_size() < 2) continue;
      int64_t k = 0, cols = 0;
      for (const Attribute& a : n.attribute()) {
        if (a.name == "K"sv) k = a.i;
        if (a.name == "N"sv) cols = a.i;
      }
      const Weight* w = m_.weight_for(node.graph, n.input(1));
      uint64_t logical = 0;
      if (!w || k <= 0 || cols <= 0) continue;
      if (mul_overflows(static_cast<uint64_t>(k), static_cast<uint64_t>(cols), &logical)) {
        throw InputError("MatMulNBits '" + std::string(n.name()) + "': K x N overflows 64 bits");
      }
      Weight& packed = m_.weights[static_cast<size_t>(w - m_.weights.data())];
      packed.elements = logical;
      packed.packed = true;
      packed.parameter = true;
    }
    // QMoE stacks every expert's weights in uint8 tensors: expert_weight_bits 4 packs two
    // parameters per byte, 8 holds one (inputs 2, 5, 8: fc1, fc2, fc3).
    for (int ni : packed_readers_) {
      const Node& node = m_.nodes[static_cast<size_t>(ni)];
      const auto& n = *node.rec;
      if (n.op_type() != "QMoE"sv || n.domain() != "com.microsoft"sv) continue;
      int64_t bits = 0;
      for (const Attribute& a : n.attribute()) {
        if (a.name == "expert_weight_bits"sv) bits = a.i;
      }
      if (bits != 4 && bits != 8) continue;
      for (int i : {2, 5, 8}) {
        if (i >= n.input_size()) continue;
        const Weight* w = m_.weight_for(node.graph, n.input(i));
        if (!w || w->packed || dtype_bits(w->dtype) != 8) continue;
        Weight& packed = m_.weights[static_cast<size_t>(w - m_.weights.data())];
        uint64_t logical = packed.elements;
        if (bits == 4 && mul_overflows(packed.elements, 2, &logical)) {
          throw InputError("QMoE '" + std::string(n.name()) + "': the unpacked weight count overflows 64 bits");
        }
        packed.elements = logical;
        packed.packed = bits == 4;
        packed.parameter = true;
      }
    }
    // (From the DequantizeLinear nodes, not a pass over every weight: at 10,000 layers the weights
    // are 24 MB, and a pass over them costs more than the few nodes do.)
    for (int ni : dequantizers_) {
      const Node& node = m_.nodes[static_cast<size_t>(ni)];
      if (node.rec->input_size() == 0) continue;
      const Weight* w = m_.weight_for(node.graph, node.rec->input(0));
      if (!w || w->parameter || w->dims.empty() || dtype_bits(w->dtype) == 0) continue;
      m_.weights[static_cast<size_t>(w - m_.weights.data())].parameter = true;
    }
  }

  // The value id of name k of node n, in graph gi; -1 for an empty name (an omitted input). The
  // reader numbered each distinct name, so a name another node of gi used already is found by its
  // number, with no hashing; a name new to gi is interned under the hash the reader computed.
  int value_of(const NodeRec& n, size_t k, std::string_view name, int gi) {
    if (name.empty()) return -1;
    const size_t key = static_cast<size_t>(n.slot(k));
    int32_t& first = first_value_[key];
    if (first >= 0 && m_.values[static_cast<size_t>(first)].graph == gi) return first;
    const int id = m_.value_index.intern_hashed(m_.values, gi, name, name_hashes_[key]);
    if (first < 0) first = id;
    return id;
  }

  // Producers, consumers and a topological order; a cycle makes the model unreadable.
  void index_graph(int gi) {
    Graph& g = m_.graphs[gi];
    const auto& nodes = raw_nodes_[gi];
    for (int ni : nodes) {
      const NodeRec& n = *m_.nodes[ni].rec;
      for (int o = 0; o < n.output_size(); ++o) {
        const size_t k = static_cast<size_t>(n.input_size() + o);
        const int id = value_of(n, k, n.output(o), gi);
        n.set_value_id(k, id);
        if (id >= 0) m_.values[static_cast<size_t>(id)].producer = ni;
      }
    }
    // Kahn's order over the graph's own nodes, by their position in `nodes`.
    position_.resize(m_.nodes.size());
    for (size_t k = 0; k < nodes.size(); ++k) position_[static_cast<size_t>(nodes[k])] = static_cast<int>(k);
    std::vector<int> pending(nodes.size(), 0);  // inputs produced by nodes of this graph
    std::vector<std::pair<int, int>> edges;     // (producer's position, reader's position)
    for (size_t k = 0; k < nodes.size(); ++k) {
      const int ni = nodes[k];
      const NodeRec& n = *m_.nodes[ni].rec;
      for (int i = 0; i < n.input_size(); ++i) {
        const std::string_view in = n.input(i);
        const int id = value_of(n, static_cast<size_t>(i), in, gi);
        n.set_value_id(static_cast<size_t>(i), id);
        if (id < 0) continue;
        const Value& v = m_.values[static_cast<size_t>(id)];
        reads_.push_back({id, ni});
        if (v.producer >= 0) {
          ++pending[k];
          edges.emplace_back(position_[static_cast<size_t>(v.producer)], static_cast<int>(k));
        }
        const Weight* w = v.weight >= 0 ? &m_.weights[static_cast<size_t>(v.weight)]
                          : v.producer >= 0 ? nullptr
                          : m_.weight_for(g.parent, in);  // a name of an enclosing scope
        if (w) {
          // A node that reads a tensor through several inputs is one consumer, listed once.
          const int wi = static_cast<int>(w - m_.weights.data());
          if (last_reader_[static_cast<size_t>(wi)] != ni) weight_reads_.emplace_back(wi, ni);
          last_reader_[static_cast<size_t>(wi)] = ni;
        }
      }
    }
    // The readers of each node, in one list grouped by producer (no vector per node).
    std::vector<int> users;
    const std::vector<uint32_t> user_runs = group_runs(edges, nodes.size(), users);
    edges = {};
    std::vector<int> ready;
    for (size_t k = 0; k < nodes.size(); ++k) {
      if (pending[k] == 0) ready.push_back(static_cast<int>(k));
    }
    g.nodes.reserve(nodes.size());
    for (size_t r = 0; r < ready.size(); ++r) {  // ready grows as nodes become ready: a FIFO
      const int k = ready[r];
      g.nodes.push_back(nodes[static_cast<size_t>(k)]);
      for (uint32_t e = user_runs[static_cast<size_t>(k)]; e < user_runs[static_cast<size_t>(k) + 1]; ++e) {
        const int u = users[e];
        if (--pending[static_cast<size_t>(u)] == 0) ready.push_back(u);
      }
    }
    if (g.nodes.size() != nodes.size()) {
      for (size_t k = 0; k < nodes.size(); ++k) {
        if (pending[k] > 0) {
          const auto& n = *m_.nodes[nodes[k]].rec;
          throw InputError("graph '" + m_.scope_name(gi) + "' has a cycle through node '" +
                           std::string(n.name().empty() ? n.op_type() : n.name()) + "' (" + std::string(n.op_type()) + ")");
        }
      }
    }
  }

  // Each value's defining record (Value::def), so a lookup from a node's own name reads it at once.
  // A name no node of its scope produces and no weight of its scope holds is looked up outwards,
  // once, by name (graph inputs, and a subgraph's reads of its enclosing scopes' values).
  void resolve_definitions() {
    for (size_t id = 0; id < m_.values.size(); ++id) {
      Value& v = m_.values[id];
      if (v.producer >= 0 || v.weight >= 0) v.def = static_cast<int>(id);
      else if (v.graph >= 0 && m_.graphs[static_cast<size_t>(v.graph)].parent >= 0)
        v.def = m_.defining_value(m_.graphs[static_cast<size_t>(v.graph)].parent, v.name);
    }
  }

  // The consumer lists of all values and weights, one run each in Model::consumer_list and
  // Model::weight_consumer_list, grouped from the reads index_graph saw, so each keeps node order.
  void list_consumers() {
    const std::vector<uint32_t> value_runs = group_runs(reads_, m_.values.size(), m_.consumer_list);
    for (size_t i = 0; i < m_.values.size(); ++i) {
      m_.values[i].first_consumer = value_runs[i];
      m_.values[i].consumer_count = value_runs[i + 1] - value_runs[i];
    }
    const std::vector<uint32_t> weight_runs = group_runs(weight_reads_, m_.weights.size(), m_.weight_consumer_list);
    for (size_t i = 0; i < m_.weights.size(); ++i) {
      m_.weights[i].consumers =
          NodeSpan(m_.weight_consumer_list.data() + weight_runs[i], weight_runs[i + 1] - weight_runs[i]);
    }
    for (auto* pairs : {&reads_, &weight_reads_}) {
      pairs->clear();
      pairs->shrink_to_fit();
    }
    last_reader_.clear();
    last_reader_.shrink_to_fit();
    // m_.values keeps its capacity: reserved for every output and tensor, the part never written
    // takes no memory, and a copy to fit would hold both for a moment.
  }

  // (key, node) pairs grouped by key into `list`, a stable counting sort: each key's nodes keep
  // the pairs' order. Returns where each key's run starts, with the list's length last.
  static std::vector<uint32_t> group_runs(const std::vector<std::pair<int, int>>& pairs, size_t keys,
                                          std::vector<int>& list) {
    std::vector<uint32_t> start(keys + 1, 0);
    for (const auto& p : pairs) ++start[static_cast<size_t>(p.first) + 1];
    for (size_t k = 1; k <= keys; ++k) start[k] += start[k - 1];
    list.resize(pairs.size());
    for (const auto& p : pairs) list[start[static_cast<size_t>(p.first)]++] = p.second;  // start[k]: run k's end
    for (size_t k = keys; k > 0; --k) start[k] = start[k - 1];
    start[0] = 0;
    return start;
  }

  std::vector<int> position_;  // a node's position in its graph's node list, while indexing it
  std::vector<std::pair<int, int>> reads_;  // (value id, node) for every input read, in node order
  std::vector<std::pair<int, int>> weight_reads_;  // (weight, node), once per node and weight, in node order
  std::vector<int> last_reader_;  // per weight, the last node that read it, while indexing
};

// The model file as the wire reader sees it, read through its byte source (source.h). Blocks grow
// while the reader moves forward (a graph's nodes are read in a few large reads) and start small
// again after a payload of more than 32 KiB is skipped, so a file of large tensors is not read
// whole in the blocks around them; a run of small tensors is read in whole blocks, not in a read
// each. A read that fails ends the stream; the failure is kept for the loader to throw, so what
// went wrong (a file that shrank, a server that stopped) is said, not only where the reader stopped.
class SourceWindow : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit SourceWindow(const ByteSource& source)
      : source_(source), size_(source.size()), buffer_(static_cast<size_t>(std::min<uint64_t>(size_, kLargest))) {}
  SourceWindow(const SourceWindow&) = delete;
  SourceWindow& operator=(const SourceWindow&) = delete;

  bool Next(const void** data, int* size) override {
    if (backed_up_ > 0) {
      *data = buffer_.get() + filled_ - backed_up_;
      *size = static_cast<int>(backed_up_);
      backed_up_ = 0;
      return true;
    }
    if (at_ >= size_ || failure_) return false;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(block_, size_ - at_));
    try {
      source_.read(at_, want, buffer_.get());
    } catch (const InputError&) {
      failure_ = std::current_exception();
      return false;
    }
    filled_ = want;
    at_ += filled_;
    block_ = std::min(block_ * 2, kLargest);
    *data = buffer_.get();
    *size = static_cast<int>(filled_);
    return true;
  }
  void BackUp(int count) override { backed_up_ = static_cast<size_t>(count); }
  bool Skip(int count) override {
    if (count < 0) return false;
    uint64_t n = static_cast<uint64_t>(count);
    if (n <= backed_up_) {
      backed_up_ -= static_cast<size_t>(n);
      return true;
    }
    n -= backed_up_;
    backed_up_ = 0;
    // Past a payload of more than a few pages the next read starts small; a short skip keeps
    // the reads large, so a run of small tensors is read in a few blocks, skipped payloads and
    // all, not a read each.
    if (n > kReadThrough) block_ = kSmallest;
    if (n > size_ - at_) {
      at_ = size_;
      return false;
    }
    at_ += n;
    return true;
  }
  int64_t ByteCount() const override { return static_cast<int64_t>(at_ - backed_up_); }
  // Throws the error of a read that failed, if one did.
  void rethrow_failure() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  static constexpr uint64_t kSmallest = 4096, kFirst = 64 * 1024, kLargest = 256 * 1024, kReadThrough = 32 * 1024;
  const ByteSource& source_;
  uint64_t size_;
  ScratchBlock buffer_;
  uint64_t at_ = 0;        // file offset just past the buffer
  size_t filled_ = 0;      // bytes in the buffer
  size_t backed_up_ = 0;   // of those, given back by the reader
  uint64_t block_ = kFirst;
  std::exception_ptr failure_;
};

// Refuses what protobuf cannot read, with a message a person understands.
void check_model_size(uint64_t size) {
  if (size == 0) throw InputError("file is empty");
  if (size > static_cast<uint64_t>(INT_MAX)) {
    throw InputError("file is " + std::to_string(size) +
                     " bytes; an embedded model above protobuf's 2 GiB limit cannot be read "
                     "(models this large keep their weights in external data)");
  }
}

}  // namespace

namespace {

// The part of loading after the bytes are open: the wire reader, then the index.
void read_and_index(Model& m, google::protobuf::io::ZeroCopyInputStream& stream, const LoadOptions& options,
                    const char* memory, const SourceWindow* window = nullptr) {
  const GraphBody* main = nullptr;
  std::vector<GraphBody*> functions;
  std::vector<uint64_t> name_hashes;
  {
    CodedInputStream in(&stream);
    in.SetTotalBytesLimit(INT_MAX);
    in.PushLimit(static_cast<int>(m.file_size));
    WireReader reader(in, m.file_size, options, m.proto.arena());
    try {
      reader.read_model(m.proto.get());
    } catch (const InputError&) {
      if (window) window->rethrow_failure();  // what stopped the reader, if a read failed
      throw;
    }
    if (window) window->rethrow_failure();
    m.stripped_payload_bytes = reader.stripped_bytes;
    main = reader.main;
    functions = std::move(reader.functions);
    name_hashes = reader.take_name_hashes();
    // Sized once from what the reader counted, not by doubling. Nearly every value is a node's
    // output or a weight.
    const size_t tensors = reader.tensors_read;
    m.weights.reserve(tensors);
    m.nodes.reserve(reader.nodes_read);
    m.values.reserve(reader.outputs_read + tensors);
    m.value_index.reserve(reader.outputs_read + tensors);
  }
  if (!main) throw InputError("not an ONNX model: no graph found");
  Indexer(m, options, std::move(name_hashes), memory).run(*main, functions);
}

}  // namespace

Model load_model_bytes(const char* data, uint64_t size, const std::string& name, const LoadOptions& options) {
  if (options.base_dir.empty()) throw InputError("a model in memory needs a folder for its external data");
  if (size == 0) throw InputError("the model is empty");
  if (size > static_cast<uint64_t>(INT_MAX)) {
    throw InputError("the model is " + std::to_string(size) +
                     " bytes; an embedded model above protobuf's 2 GiB limit cannot be read");
  }
  Model m;
  m.path = name;
  m.file_size = size;
  google::protobuf::io::ArrayInputStream stream(data, static_cast<int>(size));
  read_and_index(m, stream, options, data);
  spdlog::debug("{}: {} graphs, {} nodes, {} tensors, read from memory", name, m.graphs.size(), m.nodes.size(),
                m.weights.size());
  return m;
}

Model load_model(const ByteSource& source, const LoadOptions& options) {
  Model m;
  m.path = source.name();
  m.file_size = source.size();
  check_model_size(m.file_size);
  const FileIdentity id = source.identity();
  // The embedded payloads are read later from this file only, when it is a local file.
  if (id.known) m.payload_files.insert(PayloadFile{m.path, id});
  LoadOptions kept = options;
  if (!id.known) kept.keep_shape_bytes = kept.keep_raw_bytes = kept.keep_payload_bytes;
  SourceWindow window(source);
  read_and_index(m, window, kept, nullptr, &window);
  spdlog::debug("{}: {} graphs, {} nodes, {} tensors, {} payload bytes left unread", m.path, m.graphs.size(),
                m.nodes.size(), m.weights.size(), m.stripped_payload_bytes);
  return m;
}

Model load_model(const std::string& path, const LoadOptions& options) {
  return load_model(FileSource(path, "is a directory with no .onnx files in it"), options);
}

}  // namespace headcount
