// headcount/model.h: the loaded model, as plain data the later stages read.
//
// The loader (load.h) fills it; the matcher, rules and renderers only read it. Nodes and tensors
// are compact records read from the wire (NodeRec, TensorRec), the model's other fields a
// ModelProto; large tensor payloads are left in the file: a Weight says where its bytes are
// instead of holding them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <google/protobuf/arena.h>
#include <onnx/onnx_pb.h>

#include "headcount/checked.h"
#include "headcount/file_identity.h"

namespace headcount {

// Op types are compared as views ("MatMul"sv): a name of another length differs without a look at
// its characters.
using namespace std::string_view_literals;

// A run of T stored contiguously: the consumers of one value, a node's inputs, an attribute's ints.
template <typename T>
class Span {
 public:
  Span() = default;
  Span(const T* begin, size_t size) : begin_(begin), size_(size) {}
  Span(const std::vector<T>& v) : begin_(v.data()), size_(v.size()) {}  // NOLINT: a view, as std::span
  Span(std::vector<T>&&) = delete;  // no view of a temporary
  const T* begin() const { return begin_; }
  const T* end() const { return begin_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return begin_[i]; }
  const T& front() const { return begin_[0]; }
  const T& back() const { return begin_[size_ - 1]; }
  friend bool operator==(Span a, Span b) { return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin()); }
  friend bool operator!=(Span a, Span b) { return !(a == b); }

 private:
  const T* begin_ = nullptr;
  size_t size_ = 0;
};
using NodeSpan = Span<int>;

// One tensor as the stages read it: onnx.proto's TensorProto without its large payload. Its type,
// shape and external data entries, where its raw_data was in the file, and its payload when small
// enough to keep (shape constants, scales). Views and runs in the skeleton's arena.
struct TensorRec {
  using Entry = std::pair<std::string_view, std::string_view>;
  // What most tensors lack, apart: external data entries, payloads in typed fields.
  struct Rare {
    Span<Entry> external_data;  // (key, value) entries
    Span<int64_t> int64_data;
    Span<int32_t> int32_data;
    Span<float> float_data;
    Span<double> double_data;
  };
  std::string_view name;
  Span<int64_t> dims;
  std::string_view raw_data;  // kept payloads only, as are the typed fields
  int64_t raw_offset = -1;    // where raw_data began in the file (kept or not), -1 when it has none
  uint64_t raw_length = 0;
  const TensorRec* next = nullptr;  // the next initializer of its graph, in file order
  const Rare* rare = nullptr;
  // The payload's middle element in the canonical orientation (canonical_position), when the
  // reader had it in its window as it skipped the payload: the content comparison's first read.
  uint64_t middle = 0;
  // The payload's first bytes (up to 8), when the reader had them in its window as it skipped the
  // payload: a value check's first element (for_each_value), which most checks need alone.
  uint64_t head = 0;
  int32_t data_type = 0;
  uint8_t middle_size = 0;  // bytes of `middle` (the element's size), 0 when not seen
  uint8_t head_size = 0;    // bytes of `head`, 0 when not seen
  bool external = false;  // data_location is EXTERNAL

  Span<Entry> external_data() const { return rare ? rare->external_data : Span<Entry>(); }
  Span<int64_t> int64_data() const { return rare ? rare->int64_data : Span<int64_t>(); }
  Span<int32_t> int32_data() const { return rare ? rare->int32_data : Span<int32_t>(); }
  Span<float> float_data() const { return rare ? rare->float_data : Span<float>(); }
  Span<double> double_data() const { return rare ? rare->double_data : Span<double>(); }
};

// Where a weight tensor's bytes live.
enum class Storage { Embedded, External, ConstantNode };

// What a stat of an external data file found (the file is never opened to count).
// NotChecked: the data file is in a folder that is not on this machine and not listed (a remote
// model at a plain URL); nothing says whether it is there.
enum class ExternalStatus { NotExternal, Present, Missing, SizeMismatch, NotChecked };

const char* storage_name(Storage s);
const char* external_status_name(ExternalStatus s);

// A file weights' bytes are read from (the model, an external data file, a checkpoint's file),
// as the loader found it: a read of the bytes later opens it again only when it is still that
// file (payload.h), so a file replaced since (by another, or by a FIFO) is not read.
struct PayloadFile {
  std::string path;
  FileIdentity identity;  // not known for a model read from memory
  bool operator<(const PayloadFile& o) const { return path < o.path; }
  friend bool operator<(const PayloadFile& a, const std::string& b) { return a.path < b; }
  friend bool operator<(const std::string& a, const PayloadFile& b) { return a < b.path; }
};

// One tensor stored in the model: an initializer (embedded or external), a sparse initializer, or
// the value of a Constant node. Elements and bytes come from dims and data_type, overflow-checked.
struct Weight {
  std::string_view name;  // the value name nodes refer to, owned by the skeleton
  int graph = 0;         // index into Model::graphs of the scope it is declared in
  int32_t dtype = 0;     // onnx::TensorProto_DataType
  Span<int64_t> dims;  // the record's dims, in the skeleton
  uint64_t elements = 0;
  uint64_t bytes = 0;
  Storage storage = Storage::Embedded;
  bool parameter = false;   // counts as a parameter (see README "What counts as a parameter")
  bool sparse = false;      // a SparseTensorProto; elements are the dense shape's
  bool packed = false;      // packed sub-byte weight (MatMulNBits): elements are the logical K x N
  // Payload location for content comparisons: in the model file (embedded raw_data) or in an
  // external file. payload_known is false when the bytes are in typed fields or missing.
  bool payload_known = false;
  const PayloadFile* payload_file = nullptr;  // the model file, or an external file checked to lie in its folder
  uint64_t payload_offset = 0;
  uint64_t payload_length = 0;
  // A model loaded from memory (load_model_bytes): the payload in the caller's buffer, which
  // must outlive every read of it; payload_file is then nullptr.
  const char* payload_memory = nullptr;
  // External data as written in the file, and what a stat found. Apart, as few weights have it,
  // in the skeleton's arena.
  struct External {
    std::string_view location;  // as written, a view of the skeleton
    uint64_t offset = 0;
    int64_t length = -1;  // -1: not given, the tensor runs to its computed size
    ExternalStatus status = ExternalStatus::NotExternal;
    uint64_t file_size = 0;  // the data file's size, when a stat (or a remote folder's listing) found it
  };
  const External* external = nullptr;  // set for every tensor whose data_location is EXTERNAL
  const TensorRec* tensor = nullptr;  // as read; payload present only when small
  NodeSpan consumers;  // indices into Model::nodes: a run of Model::weight_consumer_list

  ExternalStatus external_status() const { return external ? external->status : ExternalStatus::NotExternal; }
};

// A graph scope: the main graph, a subgraph held by a node attribute, or a function body. A scope
// knows only its own part of the name, never a copy of its parent's: deep nesting costs memory in
// proportion to the graph, and Model::scope_name() builds the whole path when a report needs it.
struct Graph {
  int parent = -1;   // enclosing scope, -1 for the main graph and functions
  int owner = -1;    // the node whose attribute holds this subgraph (-1 for main and functions)
  std::string_view attribute;  // that attribute's name, owned by the skeleton
  int list_index = -1;         // position in a GRAPHS attribute, -1 for a single GRAPH
  std::string function;        // "DOMAIN.NAME" of a function body
  std::vector<int> nodes;  // topological order
};

// One name as one graph scope uses it: what produces it, which weight it is, which nodes read it.
// Each (scope, name) pair is one record with an integer id, so the stages' hot maps are keyed by
// ids, and the name is a view of the string the skeleton owns: each name is held once.
struct Value {
  std::string_view name;
  int graph = 0;
  int producer = -1;  // node index, or -1
  int weight = -1;    // weight index, or -1 (a Constant node's output has both)
  // The value that defines this name as its scope sees it: itself when a node produces it or a
  // weight holds it, else the nearest enclosing scope's that does; -1 for graph inputs and names
  // nothing defines.
  int def = -1;
  uint32_t first_consumer = 0, consumer_count = 0;  // a run of Model::consumer_list
};

struct GraphBody;

// One attribute of a node: the fields of onnx.proto's AttributeProto the stages read, as views
// of the skeleton. Fields the stages never read (doc strings, type protos) are not kept.
struct Attribute {
  // What most attributes lack, apart: a string, floats, subgraphs, a sparse tensor.
  struct Rare {
    std::string_view s;
    Span<float> floats;
    const onnx::SparseTensorProto* sparse_tensor = nullptr;
    const GraphBody* g = nullptr;
    Span<const GraphBody*> graphs;
  };
  std::string_view name;
  Span<int64_t> ints;
  int64_t i = 0;
  const TensorRec* t = nullptr;
  const Rare* rare = nullptr;
  float f = 0;
  int32_t type = 0;  // AttributeProto.AttributeType; 0 when absent or a number onnx.proto does not define
  bool has_i = false;

  std::string_view s() const { return rare ? rare->s : std::string_view(); }
  Span<float> floats() const { return rare ? rare->floats : Span<float>(); }
  const onnx::SparseTensorProto* sparse_tensor() const { return rare ? rare->sparse_tensor : nullptr; }
  const GraphBody* g() const { return rare ? rare->g : nullptr; }
  Span<const GraphBody*> graphs() const { return rare ? rare->graphs : Span<const GraphBody*>(); }
};

// A value name as a node holds it, with the id (Model::values) the name has in the node's own
// scope, so the lookups of Model read the record at once instead of looking the name up. A Name is
// a string_view: any other string converts to one with no id (-1), and is looked up by name; a copy
// into a plain string_view drops the id. Only NodeRec makes names with ids, and a Name cannot be
// shortened in place (remove_prefix), so an id always belongs to its text. The ids are set when
// the graph is indexed (load_model): the indexer itself passes plain views.
struct Name : std::string_view {
  int id = -1;
  Name() = default;
  Name(std::string_view s) : std::string_view(s) {}     // NOLINT: any string is a name, without an id
  Name(const std::string& s) : std::string_view(s) {}   // NOLINT
  Name(const char* s) : std::string_view(s) {}          // NOLINT
  Name(std::string_view s, int value_id) : std::string_view(s), id(value_id) {}

 private:
  using std::string_view::remove_prefix;
  using std::string_view::remove_suffix;
  using std::string_view::swap;
};

// A node's inputs or its outputs: a run of names and, beside it, their ids.
class Names {
 public:
  class iterator {
   public:
    iterator(const std::string_view* s, const int32_t* id) : s_(s), id_(id) {}
    Name operator*() const { return Name(*s_, *id_); }
    iterator& operator++() {
      ++s_;
      ++id_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return s_ != o.s_; }

   private:
    const std::string_view* s_;
    const int32_t* id_;
  };
  Names(const std::string_view* names, const int32_t* ids, size_t size) : names_(names), ids_(ids), size_(size) {}
  iterator begin() const { return iterator(names_, ids_); }
  iterator end() const { return iterator(names_ + size_, ids_ + size_); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  Name operator[](size_t i) const { return Name(names_[i], ids_[i]); }

 private:
  const std::string_view* names_;
  const int32_t* ids_;
  size_t size_;
};

// One node as the file gives it: the fields of NodeProto the stages read, a few words and views
// in the skeleton's arena (a protobuf message per node cost a dozen allocations and ~700 bytes).
// The accessors read like NodeProto's, but names are views.
class NodeRec {
 public:
  // `names`: the inputs, then the outputs, followed in the same arena block by one int32_t slot
  // per name (names_block()): the loader writes each name's index in its name pool there, and the
  // indexer reads it and writes the value id in its place.
  // op_type and domain point to views the loader holds once per distinct word (a graph has a few),
  // so a node holds a pointer to each, not a view.
  NodeRec(const std::string_view* op_type, const std::string_view* domain, std::string_view name,
          Span<std::string_view> names, size_t inputs, Span<Attribute> attributes)
      : op_type_(op_type), domain_(domain), name_(name), names_(names.begin()), attributes_(attributes.begin()),
        inputs_(static_cast<uint32_t>(inputs)), outputs_(static_cast<uint32_t>(names.size() - inputs)),
        attribute_count_(static_cast<uint32_t>(attributes.size())) {}
  // Bytes of the arena block that holds `count` names and their ids.
  static size_t names_block(size_t count) { return count * (sizeof(std::string_view) + sizeof(int32_t)); }
  std::string_view op_type() const { return *op_type_; }
  std::string_view domain() const { return *domain_; }
  std::string_view name() const { return name_; }
  int input_size() const { return static_cast<int>(inputs_); }
  Name input(int i) const { return Name(names_[i], ids()[i]); }  // i < input_size()
  Names input() const { return Names(names_, ids(), inputs_); }
  int output_size() const { return static_cast<int>(outputs_); }
  Name output(int i) const {  // i < output_size()
    const size_t k = inputs_ + static_cast<uint32_t>(i);
    return Name(names_[k], ids()[k]);
  }
  Names output() const { return Names(names_ + inputs_, ids() + inputs_, outputs_); }
  int attribute_size() const { return static_cast<int>(attribute_count_); }
  Span<Attribute> attribute() const { return Span<Attribute>(attributes_, attribute_count_); }
  const NodeRec* next() const { return next_; }  // the next node of its graph body, in file order
  // The indexer's: the slot of name k (inputs first, then outputs), and its value id in the
  // node's scope.
  int32_t slot(size_t k) const { return ids()[k]; }
  void set_value_id(size_t k, int id) const { const_cast<int32_t*>(ids())[k] = id; }

 private:
  friend struct GraphBody;
  const int32_t* ids() const { return reinterpret_cast<const int32_t*>(names_ + inputs_ + outputs_); }
  const std::string_view *op_type_, *domain_;
  std::string_view name_;
  const std::string_view* names_;  // and the ids after them: one arena block, written by the loader
  const Attribute* attributes_;
  NodeRec* next_ = nullptr;
  uint32_t inputs_, outputs_, attribute_count_;  // counts fit: a node's fields fit in its message's 2 GiB
};

// A graph or function body as read: its nodes and initializers in file order, and (for a graph)
// its other fields in a GraphProto. A function's other fields are in the model's FunctionProto.
struct GraphBody {
  onnx::GraphProto* proto = nullptr;  // nullptr for a function body; holds no nodes or initializers
  NodeRec* first = nullptr;
  NodeRec* last = nullptr;
  TensorRec* first_initializer = nullptr;
  TensorRec* last_initializer = nullptr;
  void append(NodeRec* n) {
    if (last) last->next_ = n;
    else first = n;
    last = n;
  }
  void append(TensorRec* t) {
    if (last_initializer) last_initializer->next = t;
    else first_initializer = t;
    last_initializer = t;
  }
};

// One node of any graph or function body, in topological order within its graph.
struct Node {
  const NodeRec* rec = nullptr;
  int graph = 0;
};

// SipHash-2-4 (Aumasson and Bernstein, 2012) of `data` under the 128-bit key (k0, k1): a keyed
// hash, so names in a file cannot be chosen to collide without the key.
uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data);
// SipHash-1-3, its variant with one round per block and three to finish: the keyed hash of
// hash tables (Rust's HashMap uses it) at about half the rounds.
uint64_t siphash13(uint64_t k0, uint64_t k1, std::string_view data);
// SipHash-1-3 of `data` under a key drawn once per process: for tables keyed by a file's strings.
uint64_t keyed_hash(std::string_view data);

// (scope, name) -> value id: one open-addressing table for the whole model, its slots holding a
// part of each key's hash and the id, so a lookup compares names only when the hashes agree.
// A key's hash is the name's SipHash under a key drawn once per process (keyed_hash), with the
// scope mixed in: a hostile file cannot pile its names onto one slot (which would make indexing
// quadratic), and ids, given in order of first use, do not depend on the key.
//
// The stages seldom come here: a node's own names carry their ids (Name), and the indexer finds a
// name used before through the reader's numbering of names. This table answers for any other
// string (a copy, a part of a name, a name seen from another scope).
class ValueIndex {
 public:
  // The id of `name` in graph g, or -1.
  int find(const std::vector<Value>& values, int g, std::string_view name) const;
  // The id of `name` in graph g, a new record in `values` when there was none.
  int intern(std::vector<Value>& values, int g, std::string_view name);
  // The same, for a name whose keyed_hash() is known already.
  int intern_hashed(std::vector<Value>& values, int g, std::string_view name, uint64_t name_hash);
  // Sizes the table for about `names` values before the first intern, so a large graph's table
  // is made once instead of by doubling.
  void reserve(size_t names);

 private:
  static uint64_t scope_hash(uint64_t name_hash, int g);
  int find_hashed(const std::vector<Value>& values, int g, std::string_view name, uint64_t h) const;
  void grow();
  std::vector<uint64_t> slots_;  // (hash >> 32) << 32 | (id + 1); 0 is an empty slot
};

// The model's skeleton (large payloads stripped), in a protobuf arena: the ModelProto with its
// graphs' other fields, and the node and tensor records, allocated in a few blocks, freed at once.
class Skeleton {
 public:
  Skeleton() : arena_(std::make_unique<google::protobuf::Arena>(options())),
               message_(google::protobuf::Arena::CreateMessage<onnx::ModelProto>(arena_.get())) {}
  onnx::ModelProto* operator->() const { return message_; }
  onnx::ModelProto& operator*() const { return *message_; }
  onnx::ModelProto* get() const { return message_; }
  google::protobuf::Arena* arena() const { return arena_.get(); }

 private:
  // Blocks from 4 KiB up to 256 KiB: a large graph's skeleton is a few hundred allocations, not
  // thousands, and a small model's stays small.
  static google::protobuf::ArenaOptions options() {
    google::protobuf::ArenaOptions o;
    o.start_block_size = 4 << 10;
    o.max_block_size = 256 << 10;
    o.block_alloc = allocate_block;
    o.block_dealloc = free_block;
    return o;
  }
  static void* allocate_block(size_t size);
  static void free_block(void* block, size_t size);
  std::unique_ptr<google::protobuf::Arena> arena_;  // owns message_; moving the Skeleton keeps it valid
  onnx::ModelProto* message_;
};

// Everything the loader learned about one file.
struct Checkpoint;

struct Model {
  std::string path;
  uint64_t file_size = 0;
  // A checkpoint (safetensors, GGUF) read as a model of weights without a graph: its tensor index,
  // which owns the weights' names and shapes. Null for an ONNX model.
  std::shared_ptr<const Checkpoint> checkpoint;
  Skeleton proto;  // skeleton, large payloads stripped
  std::vector<Weight> weights;
  std::vector<Node> nodes;
  // The traits (ops.h) of every node's op type, or-ed: which kinds of operator the model holds at
  // all, so a stage can tell without a pass over the nodes that it has nothing to look for.
  uint64_t op_traits = 0;
  std::vector<Graph> graphs;
  std::vector<Value> values;       // every (scope, name) the graphs use, by id
  ValueIndex value_index;          // (scope, name) -> id
  std::vector<int> consumer_list;  // the consumers of every value, value after value
  std::vector<int> weight_consumer_list;  // the consumers of every weight, weight after weight
  std::set<PayloadFile, std::less<>> payload_files;  // the files weights' payloads are in, each named
                                                    // once; a Weight points at its element, which never moves
  uint64_t stripped_payload_bytes = 0;      // payload bytes skipped, never read

  // The lookups below take a node's own Name (its id, when g is the node's scope, is the record)
  // or any string (looked up by name).
  // The id of a name in graph g's own scope, or -1.
  int value_id(int g, const Name& name) const {
    if (own_id(g, name)) return name.id;
    return value_index.find(values, g, name);
  }
  // The id of the record that defines a name as seen from graph g: the nearest scope, looking
  // outwards, where a node produces it or a weight holds it; -1 for graph inputs and unknown names.
  // (Inline, as the walks ask it of nearly every node: a name with its id is read at once.)
  int defining_value(int g, const Name& name) const {
    if (own_id(g, name)) return values[static_cast<size_t>(name.id)].def;
    return defining_value_by_name(g, name);
  }
  // The weight a value name refers to as seen from graph g (looks through enclosing scopes).
  const Weight* weight_for(int g, const Name& value) const {
    const int id = defining_value(g, value);
    if (id < 0) return nullptr;
    const int w = values[static_cast<size_t>(id)].weight;  // an activation of a scope hides outer names
    return w >= 0 ? &weights[static_cast<size_t>(w)] : nullptr;
  }
  // The node producing a value as seen from graph g, or -1.
  int producer_of(int g, const Name& value) const {
    const int id = defining_value(g, value);
    return id < 0 ? -1 : values[static_cast<size_t>(id)].producer;
  }
  // Nodes consuming a value inside graph g, in node order (a node reading it twice is listed twice).
  NodeSpan consumers_of(int g, const Name& value) const {
    const int id = value_id(g, value);
    return id < 0 ? NodeSpan() : consumers(id);
  }
  // defining_value for a name without its id in g: looked up by name, scope by scope outwards.
  int defining_value_by_name(int g, const Name& name) const;
  NodeSpan consumers(int id) const {
    const Value& v = values[static_cast<size_t>(id)];
    return NodeSpan(consumer_list.data() + v.first_consumer, v.consumer_count);
  }
  // Whether `name` carries its id in graph g (a node's own name, asked about from its scope).
  bool own_id(int g, const Name& name) const {
    return name.id >= 0 && static_cast<size_t>(name.id) < values.size() && values[static_cast<size_t>(name.id)].graph == g;
  }
  // "main", "main/If_3:then_branch", "function:local.Block": the path of a scope as reports show
  // it. Long names are shortened and deep paths keep their first and last levels, so the string
  // stays short however a file nests its subgraphs.
  std::string scope_name(int g) const;
};

// The work the analyses that read values (the mask evaluator, buffers and folded constants,
// routers, mixers) may still do in one audit: one allowance, in proportion to the file (a floor,
// so much per node and per stored byte), that every step of theirs spends. An analysis that runs
// out stops where it is and leaves what it did not prove unproven (a window unknown, a buffer
// counted as a parameter, a TopK not examined); the analyses that stopped are named in the order
// they ran out, and the report says so (rule value-budget-spent).
class ValueBudget {
 public:
  static constexpr uint64_t kStep = 8;             // one evaluator step or graph visit...
  static constexpr uint64_t kElement = 1;          // ...and one stored element read, in units
  static constexpr uint64_t kFloor = uint64_t{1} << 24;  // at least this many units
  static constexpr uint64_t kPerNode = 256;        // and so many more per node
  static constexpr uint64_t kPerStoredByte = 4;    // and per byte the file stores
  explicit ValueBudget(const Model& m);
  explicit ValueBudget(uint64_t units) : left_(units), total_(units) {}
  // `units` of `analysis`'s work; false once the allowance is used up (and `analysis` named).
  bool spend(const char* analysis, uint64_t units) {
    if (left_ >= units) {
      left_ -= units;
      return true;
    }
    left_ = 0;
    stopped_by(analysis);
    return false;
  }
  bool spent() const { return left_ == 0; }
  uint64_t total() const { return total_; }
  // The analyses that ran out, each named once, in the order they did.
  const std::vector<std::string>& stopped() const { return stopped_; }
  void stopped_by(const char* analysis) {
    if (std::find(stopped_.begin(), stopped_.end(), analysis) == stopped_.end()) stopped_.push_back(analysis);
  }

 private:
  uint64_t left_;
  uint64_t total_;
  std::vector<std::string> stopped_;
};

// Node visits a stage's graph walks may still make. Each walk starts with an allowance of its own,
// and the model as a whole has one in proportion to its size, so no wiring of a graph, however
// hostile (a doubling chain, a fan-out of thousands), makes a stage more than linear in the file.
class VisitBudget {
 public:
  static constexpr uint64_t kPerNode = 64;      // the model's allowance per node...
  static constexpr uint64_t kFloor = 1u << 16;  // ...and at least this many
  explicit VisitBudget(const Model& m) : model_(kFloor + kPerNode * m.nodes.size()) {}
  void start_walk(int64_t allowance) { walk_ = allowance; }
  // A stage that reads values (routers, mixers) also spends every visit from the audit's one
  // ValueBudget, named `analysis` when it runs out.
  void share(ValueBudget* audit, const char* analysis) {
    audit_ = audit;
    analysis_ = analysis;
  }
  // One node (or one consumer of a value) looked at; false once any allowance is used up.
  bool spend() {
    if (walk_ <= 0 || model_ == 0) return false;
    if (audit_ && !audit_->spend(analysis_, ValueBudget::kStep)) {
      model_ = 0;
      return false;
    }
    --walk_;
    --model_;
    return true;
  }
  // Whether any allowance is used up (the audit's: this stage is then named as stopped too).
  bool exhausted() {
    if (audit_ && audit_->spent()) audit_->stopped_by(analysis_);
    return model_ == 0 || (audit_ && audit_->spent());
  }

 private:
  uint64_t model_;
  int64_t walk_ = 0;
  ValueBudget* audit_ = nullptr;
  const char* analysis_ = "";
};

// A node's i-th input or output name, or "" when the node has fewer: graphs from files may omit
// inputs that an operator normally has, and a missing one must read as absent, not crash.
inline Name input_of(const NodeRec& n, int i) { return i >= 0 && i < n.input_size() ? n.input(i) : Name(); }
inline Name output_of(const NodeRec& n, int i) { return i >= 0 && i < n.output_size() ? n.output(i) : Name(); }

// "[768, 3072]": a tensor shape as reports print it.
std::string shape_string(Span<int64_t> dims);

// A GGUF tensor type (ggml_type id) as a Weight's dtype: kGgmlDtype + id, beyond ONNX's numbers.
// Such a weight's bytes come from its type's block size (checkpoint.h), its dtype_bits are 0.
constexpr int32_t kGgmlDtype = 1000;

// Element width in bits for an ONNX data type, 0 when unknown (string, undefined).
int dtype_bits(int32_t dtype);
// Where element e of a tensor of these dims is stored when it is read in a canonical orientation:
// a 2-D tensor stored [M, m] with M > m is read as its transpose, so a tensor and its transposed
// copy give the same elements at the same e.
uint64_t canonical_position(Span<int64_t> dims, uint64_t elements, uint64_t e);
// Short lowercase name: float32, float16, int8, uint4 ...
std::string dtype_name(int32_t dtype);
// Whether tensors of this type can be learned parameters (float or quantized-weight types).
bool dtype_is_parameter_type(int32_t dtype);

// Integer values of a small constant tensor (int32/int64/uint8/int8 or float holding integers),
// when its payload was kept. nullopt when the payload is stripped or the type is not integral.
std::optional<std::vector<int64_t>> int_values(const TensorRec& t);
// An IEEE half-precision value as a double (NaN and infinities kept).
double half_to_double(uint16_t h);
// Float values of a small constant tensor (float32/float64/float16 as float), when kept.
std::optional<std::vector<double>> float_values(const TensorRec& t);

}  // namespace headcount
