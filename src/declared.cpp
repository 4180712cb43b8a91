// declared.cpp: comparing a model's config with what its graph holds.
#include "headcount/declared.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "headcount/numbers.h"
#include "ops.h"

namespace headcount {
namespace {

std::string commas(uint64_t n) { return with_commas(n); }

// The value every attention block has, or unknown with the reason in *why.
Int common(const std::vector<AttentionBlock>& blocks, const std::function<Int(const AttentionBlock&)>& get,
           std::string* why) {
  if (blocks.empty()) {
    *why = "the graph has no attention blocks";
    return {};
  }
  Int value;
  for (const auto& b : blocks) {
    Int v = get(b);
    if (!v.positive()) {
      *why = "block " + std::to_string(b.index) + " does not state it";
      return {};
    }
    if (value && *value != *v) {
      *why = "the blocks disagree: " + value.str() + " in block " + std::to_string(blocks[0].index) + ", " + v.str() +
             " in block " + std::to_string(b.index);
      return {};
    }
    value = v;
  }
  return value;
}

bool is_matmul(std::string_view op) { return op_has(op, Trait::MatrixProduct); }

// Whether a weight feeds a MatMul or Gemm, directly or through a Transpose.
bool feeds_matmul(const Model& m, int wi) {
  for (int ni : m.weights[static_cast<size_t>(wi)].consumers) {
    const auto& n = *m.nodes[ni].rec;
    if (is_matmul(n.op_type())) return true;
    if (n.op_type() == "Transpose"sv && n.output_size() > 0) {
      for (int c : m.consumers_of(m.nodes[ni].graph, n.output(0))) {
        if (is_matmul(m.nodes[c].rec->op_type())) return true;
      }
    }
  }
  return false;
}

void settle(DeclaredField& f) {
  if (!f.declared || !f.found) f.agreement = Agreement::NotCheckable;
  else f.agreement = *f.declared == *f.found ? Agreement::Agrees : Agreement::Differs;
}


// Adds the rows of the comparison: each field under the config's own key (and what it is derived
// from), its agreement settled.
struct Fields {
  const ModelConfig& config;
  Declared& d;
  DeclaredField* add(const char* label, const char* field, Int declared, Int found, std::string note) {
    auto it = config.key_of.find(field);
    std::string key = it == config.key_of.end() ? std::string(field) : it->second;
    auto derived = config.derived_from.find(field);
    DeclaredField f{label, key, derived == config.derived_from.end() ? "" : derived->second, declared, found,
                    false, Agreement::NotCheckable, std::move(note)};
    settle(f);
    d.fields.push_back(f);
    return &d.fields.back();
  }
};

// Layers: one self-attention block per layer, for models with one stack.
void add_layers(const std::vector<AttentionBlock>& blocks, Fields& fields) {
  int64_t self = 0;
  for (const auto& b : blocks) self += b.kind == "self";
  if (fields.config.encoder_decoder) {
    fields.add("layers", "layers", fields.config.layers, {}, "an encoder-decoder: its stacks have layers of their own");
  } else {
    fields.add("layers", "layers", fields.config.layers, self == 0 ? Int() : Int(self),
               self == 0 ? "the graph has no self-attention blocks" : "self-attention blocks in the graph");
  }
}

// The width, heads, kv heads and head size every attention block shares; returns the width.
Int add_block_shape(const std::vector<AttentionBlock>& blocks, Fields& fields) {
  const ModelConfig& config = fields.config;
  std::string why;
  Int width = common(blocks, [](const AttentionBlock& b) { return Int(b.width); }, &why);
  fields.add("hidden size", "hidden", config.hidden, width, width ? "the attention blocks' width" : why);
  Int heads = common(blocks, [](const AttentionBlock& b) { return Int(b.heads); }, &why);
  fields.add("heads", "heads", config.heads, heads, heads ? "the attention blocks' query heads" : why);
  Int kv = common(blocks, [](const AttentionBlock& b) { return Int(b.kv_heads); }, &why);
  fields.add("kv heads", "kv_heads", config.kv_heads, kv, kv ? "the attention blocks' key/value heads" : why);
  Int hd = common(blocks, [](const AttentionBlock& b) { return Int(b.head_dim); }, &why);
  fields.add("head size", "head_dim", config.head_dim, hd, hd ? "the attention blocks' Q/K head size" : why);
  return width;
}

// Feed-forward size: the side of the feed-forward matrices that is not the width.
void add_intermediate(const Model& m, const Composition& composition, Int hidden, Fields& fields) {
  std::map<int64_t, int> inner;
  for (size_t i = 0; i < m.weights.size(); ++i) {
    const Weight& w = m.weights[i];
    if (composition.part_of.empty() || composition.part_of[i] != Part::FeedForward || w.dims.size() != 2 || !hidden) continue;
    if (w.dims[0] == *hidden && w.dims[1] != *hidden) ++inner[w.dims[1]];
    else if (w.dims[1] == *hidden && w.dims[0] != *hidden) ++inner[w.dims[0]];
  }
  Int ffn;
  std::string ffn_note = "no feed-forward matrices of the width's side were found";
  if (inner.size() == 1) {
    ffn = inner.begin()->first;
    ffn_note = "the feed-forward matrices' other side";
  } else if (inner.size() > 1) {
    ffn_note = "the feed-forward matrices have " + std::to_string(inner.size()) + " different inner sizes";
  }
  fields.add("intermediate size", "intermediate", fields.config.intermediate, ffn, ffn_note);
}

// Vocabulary: the embedding table with the most rows of the width; returns its weight, or -1.
int add_vocabulary(const Model& m, const Composition& composition, Int hidden, Fields& fields) {
  int table = -1;
  for (size_t i = 0; i < m.weights.size(); ++i) {
    const Weight& w = m.weights[i];
    if (composition.part_of.empty() || composition.part_of[i] != Part::Embeddings || w.dims.size() != 2 || !hidden) continue;
    if (w.dims[1] != *hidden) continue;
    if (table < 0 || w.dims[0] > m.weights[static_cast<size_t>(table)].dims[0]) table = static_cast<int>(i);
  }
  Int vocab = table >= 0 ? Int(m.weights[static_cast<size_t>(table)].dims[0]) : Int();
  fields.add("vocabulary", "vocab", fields.config.vocab, vocab,
             table >= 0 ? "rows of the embedding table '" + std::string(m.weights[static_cast<size_t>(table)].name) + "'"
                        : "no embedding table of the width");
  return table;
}

bool is_copy(const std::vector<DuplicatePair>& duplicates, size_t i) {
  return std::any_of(duplicates.begin(), duplicates.end(), [&](const DuplicatePair& p) { return p.copy == static_cast<int>(i); });
}

// Whether a graph's LM head has a weight of its own: a parameter of the table's shape (or its
// transpose), not the table nor a copy, that feeds a product.
bool has_own_head(const Model& m, const std::vector<DuplicatePair>& duplicates, int table) {
  const Weight& t = m.weights[static_cast<size_t>(table)];
  bool own_head = false;
  for (size_t i = 0; i < m.weights.size() && !own_head; ++i) {
    const Weight& w = m.weights[i];
    bool head_shape = w.dims.size() == 2 && ((w.dims[0] == t.dims[0] && w.dims[1] == t.dims[1]) ||
                                              (w.dims[0] == t.dims[1] && w.dims[1] == t.dims[0]));
    own_head = static_cast<int>(i) != table && w.parameter && head_shape && !is_copy(duplicates, i) && feeds_matmul(m, static_cast<int>(i));
  }
  return own_head;
}

// Tied embeddings: the LM head is the table itself (or a copy of it), or a tensor of its own.
// Unknown (with why) when there is no table.
std::pair<Int, std::string> tied_embeddings(const Model& m, const Composition& composition,
                                            const std::vector<DuplicatePair>& duplicates, int table) {
  if (table < 0) return {Int(), "no embedding table to compare an LM head with"};
  bool copy = std::any_of(duplicates.begin(), duplicates.end(),
                          [&](const DuplicatePair& p) { return p.original == table || p.copy == table; });
  bool own_head = has_own_head(m, duplicates, table);
  bool checkpoint_head = false;  // a checkpoint's LM head, by its name
  if (m.checkpoint) {
    for (size_t i = 0; i < m.weights.size(); ++i) {
      if (composition.part_of[i] == Part::LMHead && !is_copy(duplicates, i)) checkpoint_head = true;
    }
  }
  if (m.checkpoint && !checkpoint_head) {
    return {Int(1), copy ? "the LM head is a copy of the embedding table (duplicate-weights)"
                         : "the checkpoint stores no LM head of its own: it is the embedding table"};
  }
  if (m.checkpoint) return {Int(0), "the LM head has a weight of its own"};
  if (copy || feeds_matmul(m, table)) {
    return {Int(1), copy ? "the LM head is a copy of the embedding table (duplicate-weights)"
                         : "the LM head multiplies by the embedding table itself"};
  }
  if (own_head) return {Int(0), "the LM head has a weight of its own"};
  return {Int(), "the graph has no LM head"};
}

// The framework's count from the config, beside the graph's: equal, or the difference and the
// parts of the formula it may be.
std::string count_note(const ModelConfig& config, const FamilyCount& count, uint64_t graph) {
  uint64_t formula = count.total;
  if (graph == formula) return "agrees with the graph's framework count";
  uint64_t diff = graph > formula ? graph - formula : formula - graph;
  std::string note = "the graph's framework count " + commas(graph) + " is " + commas(diff) + (graph > formula ? " more" : " fewer");
  // Parts of the formula whose size is the difference: a pooler or LM head the export left out.
  for (const auto& p : count.parts) {
    if (p.parameters == diff && graph < formula) note += ": the size of the " + p.part + ", which the export does not hold";
  }
  if (config.vocab && config.hidden) {
    Int vh = config.vocab * config.hidden;
    if (vh.count() == diff) note += graph > formula ? ": an LM head of its own (vocabulary · width) where the config ties it"
                                                    : ": one vocabulary · width table fewer (a tied LM head counted once)";
  }
  return note;
}

}  // namespace

const char* agreement_name(Agreement a) {
  switch (a) {
    case Agreement::Agrees: return "agrees";
    case Agreement::Differs: return "differs";
    case Agreement::NotCheckable: return "not checkable";
  }
  return "?";
}

std::string find_model_config(const std::string& model_path) {
  std::error_code ec;
  // A checkpoint named by its folder: the config is in that folder.
  std::filesystem::path dir = std::filesystem::is_directory(model_path, ec) ? std::filesystem::path(model_path)
                                                                              : std::filesystem::path(model_path).parent_path();
  for (const char* name : {"config.json", "genai_config.json"}) {
    std::filesystem::path p = dir / name;
    struct stat st;
    // Anything but a folder: a FIFO or a device is then refused by the reader, and the report says
    // why the config was not read instead of saying there is none.
    if (stat(p.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) return p.string();
  }
  return "";
}

Declared compare_declared(const ModelConfig& config, const Model& m, const AttentionResult& attention,
                          const Composition& composition, const std::vector<DuplicatePair>& duplicates,
                          uint64_t framework_parameters) {
  Declared d;
  d.config = config;
  Fields fields{config, d};
  add_layers(attention.blocks, fields);
  Int width = add_block_shape(attention.blocks, fields);
  Int hidden = width ? width : config.hidden;
  add_intermediate(m, composition, hidden, fields);
  int table = add_vocabulary(m, composition, hidden, fields);
  auto [tied, tied_note] = tied_embeddings(m, composition, duplicates, table);
  DeclaredField* t = fields.add("tied embeddings", "tied", config.tied ? Int(*config.tied ? 1 : 0) : Int(), tied, tied_note);
  t->boolean = true;
  if (!config.tied) t->agreement = Agreement::NotCheckable;
  d.count = family_count(config);
  if (d.count) d.count_note = count_note(config, *d.count, framework_parameters);
  return d;
}

}  // namespace headcount
