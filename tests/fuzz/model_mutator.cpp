// model_mutator.cpp: reflection-based mutations of an ONNX model (see model_mutator.h).
#include "model_mutator.h"

#include <climits>
#include <cstring>
#include <string>
#include <vector>

namespace fuzz {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The numbers that break naive arithmetic.
const int64_t kEdges[] = {0,         -1,          1,         2,          3,          4,          8,
                          64,        INT64_MIN,   INT64_MAX, INT64_MAX - 1, INT64_MIN + 1, 1ll << 31, (1ll << 31) - 1,
                          -(1ll << 31), 1ll << 32, 1ll << 53, (1ll << 53) + 1, 1ll << 62, -(1ll << 62)};

const char* kOps[] = {"Softmax", "MatMul", "Reshape", "Split", "Slice", "Gather", "Concat", "Gemm", "Transpose",
                      "Add", "Mul", "Div", "Sub", "Shape", "Unsqueeze", "Squeeze", "Tile", "Expand", "Einsum",
                      "Cast", "Where", "If", "Loop", "Constant", "Identity", "DequantizeLinear", "MatMulNBits",
                      "Attention", "GroupQueryAttention", "MultiHeadAttention", "PackedAttention", "QAttention",
                      "LongformerAttention", "DecoderMaskedMultiHeadAttention", "SkipLayerNormalization",
                      "LayerNormalization", "ReduceMean", "RotaryEmbedding", "FusedMatMul", "Range"};

// One place a value can be changed: element `index` of a repeated field, or -1 for a singular one.
struct Site {
  Message* msg;
  const FieldDescriptor* field;
  int index;
};

struct Sites {
  std::vector<Site> ints, strings, bytes;
  std::vector<Site> repeated;  // repeated message fields (index unused)
  std::vector<onnx::GraphProto*> graphs;
  std::vector<std::string> names;  // every value name, for rewiring
};

void collect(Message* msg, Sites& s, int depth) {
  if (depth > 80) return;
  if (auto* g = dynamic_cast<onnx::GraphProto*>(msg)) {
    s.graphs.push_back(g);
    for (const auto& n : g->node()) {
      for (const auto& x : n.input()) s.names.push_back(x);
      for (const auto& x : n.output()) s.names.push_back(x);
    }
    for (const auto& t : g->initializer()) s.names.push_back(t.name());
  }
  const Reflection* r = msg->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*msg, &fields);
  for (const FieldDescriptor* f : fields) {
    int count = f->is_repeated() ? r->FieldSize(*msg, f) : 1;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT64:
      case FieldDescriptor::CPPTYPE_ENUM:
        for (int i = 0; i < count && i < 64; ++i) s.ints.push_back({msg, f, f->is_repeated() ? i : -1});
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        for (int i = 0; i < count && i < 64; ++i) {
          (f->type() == FieldDescriptor::TYPE_BYTES ? s.bytes : s.strings).push_back({msg, f, f->is_repeated() ? i : -1});
        }
        break;
      case FieldDescriptor::CPPTYPE_MESSAGE:
        if (f->is_repeated()) s.repeated.push_back({msg, f, -1});
        for (int i = 0; i < count; ++i) {
          collect(f->is_repeated() ? r->MutableRepeatedMessage(msg, f, i) : r->MutableMessage(msg, f), s, depth + 1);
        }
        break;
      default:
        break;
    }
  }
}

template <typename T>
const T& pick(const std::vector<T>& v, std::mt19937_64& rng) {
  return v[rng() % v.size()];
}

int64_t edge(std::mt19937_64& rng) {
  if (rng() % 4 == 0) return static_cast<int64_t>(rng() % 1025) - 512;  // small numbers too
  return kEdges[rng() % (sizeof kEdges / sizeof kEdges[0])];
}

void set_int(const Site& s, std::mt19937_64& rng) {
  const Reflection* r = s.msg->GetReflection();
  const FieldDescriptor* f = s.field;
  int64_t v = edge(rng);
  bool add = f->is_repeated() && rng() % 4 == 0;  // grow a repeated field (dims, ints) by one
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t x = v > INT32_MAX || v < INT32_MIN ? (v < 0 ? INT32_MIN : INT32_MAX) : static_cast<int32_t>(v);
      if (add) r->AddInt32(s.msg, f, x);
      else if (s.index >= 0) r->SetRepeatedInt32(s.msg, f, s.index, x);
      else r->SetInt32(s.msg, f, x);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64:
      if (add) r->AddInt64(s.msg, f, v);
      else if (s.index >= 0) r->SetRepeatedInt64(s.msg, f, s.index, v);
      else r->SetInt64(s.msg, f, v);
      break;
    case FieldDescriptor::CPPTYPE_UINT64:
      if (s.index >= 0) r->SetRepeatedUInt64(s.msg, f, s.index, static_cast<uint64_t>(v));
      else r->SetUInt64(s.msg, f, static_cast<uint64_t>(v));
      break;
    case FieldDescriptor::CPPTYPE_ENUM: {
      const auto* e = f->enum_type();
      const auto* value = e->value(static_cast<int>(rng() % static_cast<uint64_t>(e->value_count())));
      if (s.index >= 0) r->SetRepeatedEnum(s.msg, f, s.index, value);
      else r->SetEnum(s.msg, f, value);
      break;
    }
    default:
      break;
  }
}

void set_string(const Site& s, const Sites& all, std::mt19937_64& rng) {
  const Reflection* r = s.msg->GetReflection();
  std::string v;
  const std::string& name = s.field->name();
  switch (rng() % 4) {
    case 0: v = name == "op_type" ? kOps[rng() % (sizeof kOps / sizeof kOps[0])] : name == "domain" ? "com.microsoft" : ""; break;
    case 1: v = all.names.empty() ? "" : pick(all.names, rng); break;
    case 2: v = ""; break;
    default: v = std::string(1 + rng() % 300, static_cast<char>('a' + rng() % 26)); break;  // a long name
  }
  if (s.index >= 0 && rng() % 4 == 0) {  // drop the element: a node loses an input or an output
    int last = r->FieldSize(*s.msg, s.field) - 1;
    r->SwapElements(s.msg, s.field, s.index, last);
    r->RemoveLast(s.msg, s.field);
  } else if (s.index >= 0) {
    r->SetRepeatedString(s.msg, s.field, s.index, v);
  } else {
    r->SetString(s.msg, s.field, v);
  }
}

// Overwrites 8 aligned bytes of a tensor payload with an edge integer: shape constants change.
void set_bytes(const Site& s, std::mt19937_64& rng) {
  const Reflection* r = s.msg->GetReflection();
  std::string v = s.index >= 0 ? r->GetRepeatedString(*s.msg, s.field, s.index) : r->GetString(*s.msg, s.field);
  if (v.size() < 8 || rng() % 8 == 0) {
    v.resize(rng() % 2 ? v.size() / 2 : v.size() + 8);  // a payload that no longer fits its dims
  } else {
    int64_t e = edge(rng);
    size_t at = (rng() % (v.size() / 8)) * 8;
    std::memcpy(&v[at], &e, 8);
  }
  if (s.index >= 0) r->SetRepeatedString(s.msg, s.field, s.index, v);
  else r->SetString(s.msg, s.field, v);
}

void change_repeated(const Site& s, std::mt19937_64& rng) {
  const Reflection* r = s.msg->GetReflection();
  int n = r->FieldSize(*s.msg, s.field);
  if (n == 0) return;
  int i = static_cast<int>(rng() % static_cast<uint64_t>(n)), j = static_cast<int>(rng() % static_cast<uint64_t>(n));
  switch (rng() % 3) {
    case 0: {  // duplicate element i at the end
      Message* copy = r->AddMessage(s.msg, s.field);
      copy->CopyFrom(r->GetRepeatedMessage(*s.msg, s.field, i));
      break;
    }
    case 1:  // drop element i
      r->SwapElements(s.msg, s.field, i, n - 1);
      r->RemoveLast(s.msg, s.field);
      break;
    default:
      r->SwapElements(s.msg, s.field, i, j);
      break;
  }
}

void rewire(onnx::GraphProto* g, const Sites& all, std::mt19937_64& rng) {
  if (g->node_size() == 0 || all.names.empty()) return;
  onnx::NodeProto* n = g->mutable_node(static_cast<int>(rng() % static_cast<uint64_t>(g->node_size())));
  if (n->input_size() == 0 || rng() % 4 == 0) {
    n->add_input(pick(all.names, rng));
    return;
  }
  int i = static_cast<int>(rng() % static_cast<uint64_t>(n->input_size()));
  if (rng() % 2) {
    n->set_input(i, pick(all.names, rng));
  } else {
    int j = static_cast<int>(rng() % static_cast<uint64_t>(n->input_size()));
    std::string a = n->input(i);
    n->set_input(i, n->input(j));
    n->set_input(j, a);
  }
}

// Moves a node into the then_branch of a new If (names stay visible from the outer scope), or the
// whole graph into the body of a new Loop node.
void nest(onnx::GraphProto* g, std::mt19937_64& rng) {
  if (g->node_size() == 0) return;
  if (rng() % 2) {
    int i = static_cast<int>(rng() % static_cast<uint64_t>(g->node_size()));
    onnx::NodeProto inner = g->node(i);
    onnx::NodeProto* wrapper = g->mutable_node(i);
    wrapper->Clear();
    wrapper->set_op_type("If");
    wrapper->add_input(inner.input_size() ? inner.input(0) : "cond");
    for (const auto& o : inner.output()) wrapper->add_output(o);
    auto* then_branch = wrapper->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    *then_branch->mutable_g()->add_node() = inner;
    for (const auto& o : inner.output()) then_branch->mutable_g()->add_output()->set_name(o);
    return;
  }
  onnx::GraphProto body = *g;
  onnx::NodeProto* loop = g->add_node();
  loop->set_op_type("Loop");
  loop->add_output("loop_out_" + std::to_string(rng() % 1000));
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(body);
}

}  // namespace

void mutate(onnx::ModelProto& m, std::mt19937_64& rng, int steps) {
  for (int step = 0; step < steps; ++step) {
    Sites s;
    collect(&m, s, 0);
    switch (rng() % 8) {
      case 0:
      case 1:
        if (!s.ints.empty()) set_int(pick(s.ints, rng), rng);
        break;
      case 2:
        if (!s.strings.empty()) set_string(pick(s.strings, rng), s, rng);
        break;
      case 3:
        if (!s.bytes.empty()) set_bytes(pick(s.bytes, rng), rng);
        break;
      case 4:
        if (!s.repeated.empty()) change_repeated(pick(s.repeated, rng), rng);
        break;
      case 5:
      case 6:
        if (!s.graphs.empty()) rewire(pick(s.graphs, rng), s, rng);
        break;
      default:
        if (!s.graphs.empty() && m.ByteSizeLong() < (1u << 20)) nest(pick(s.graphs, rng), rng);
        break;
    }
  }
}

}  // namespace fuzz
