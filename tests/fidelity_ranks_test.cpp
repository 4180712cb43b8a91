// The export check, a test per tensor rank in every pairing it tries (issue 39): as stored,
// transposed, reshaped, packed (rows and columns) and llama.cpp's rotary rows. Each builds a
// float32 checkpoint (safetensors, or GGUF for the rotary rows) and an ONNX export in a TempDir,
// changes one value, and checks that the change fails the gate: the export check's verdict (by
// the library), `diff --fail-on-change` (exit 1) and `audit --checkpoint` (exit 1). A pairing that
// does not exist for a rank (transposed and rotary rows need a matrix) leaves the tensor compared
// in a layout that covers every element, never "kept".
//
// Values are the element's index + 1 (every value distinct, exact in float32), so the element that
// differs and by how much are worked by hand: the changed one is set to its value + 100.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "gguf_writer.h"
#include "headcount/audit.h"
#include "headcount/fidelity.h"
#include "test_util.h"

using namespace headcount;

namespace {

struct T {
  std::string name;
  std::vector<int64_t> dims;  // the model's own order (GGUF's ne is their reverse)
  std::vector<float> values;
};

uint64_t count(const std::vector<int64_t>& dims) {
  uint64_t n = 1;
  for (int64_t d : dims) n *= static_cast<uint64_t>(d);
  return n;
}

// 1 + offset, 2 + offset, ...: the element's index + 1 (+ offset).
T iota(const std::string& name, std::vector<int64_t> dims, float offset = 0) {
  T t{name, dims, {}};
  for (uint64_t e = 0; e < count(dims); ++e) t.values.push_back(static_cast<float>(e + 1) + offset);
  return t;
}

std::string raw(const std::vector<float>& v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4); }

std::string dims_json(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? "," : "") + std::to_string(dims[k]);
  return s + "]";
}

std::string write_safetensors(const testutil::TempDir& dir, const std::vector<T>& ts) {
  std::string header = "{", data;
  for (const T& t : ts) {
    const uint64_t at = data.size();
    data += raw(t.values);
    header += std::string(header.size() > 1 ? "," : "") + "\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":" +
              dims_json(t.dims) + ",\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  std::string file;
  gguf_test::put_u64(file, header.size());
  testutil::write_bytes(dir.file("ckpt.safetensors"), file + header + data);
  return dir.file("ckpt.safetensors");
}

// A llama GGUF of one block with `heads` query and key/value heads, every tensor F32.
std::string write_gguf(const testutil::TempDir& dir, const std::vector<T>& ts, uint32_t heads) {
  gguf_test::GgufWriter w;
  w.str("general.architecture", "llama").u32("llama.block_count", 1);
  w.u32("llama.attention.head_count", heads).u32("llama.attention.head_count_kv", heads);
  std::string data;
  for (const T& t : ts) {
    std::vector<uint64_t> ne(t.dims.rbegin(), t.dims.rend());
    data.resize((data.size() + w.alignment - 1) / w.alignment * w.alignment, '\0');
    w.tensor(t.name, ne, gguf_test::kF32, data.size());
    data += raw(t.values);
  }
  testutil::write_bytes(dir.file("ckpt.gguf"), w.header() + data);
  return dir.file("ckpt.gguf");
}

// An ONNX model whose initializers are `ts`, each read by an Identity.
std::string write_export(const testutil::TempDir& dir, const std::vector<T>& ts) {
  onnx::ModelProto m = testutil::model();
  auto* g = m.mutable_graph();
  for (const T& t : ts) {
    onnx::TensorProto p = testutil::tensor(t.name, t.dims, onnx::TensorProto::FLOAT, true);
    p.set_raw_data(raw(t.values));
    *g->add_initializer() = p;
    testutil::node(g, "Identity", {t.name}, {t.name + "/out"});
    auto* o = g->add_output();
    o->set_name(t.name + "/out");
    o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
  return testutil::saved(m, dir);
}

// The export check by the library, and the gate by the command line both ways.
struct Checked {
  Fidelity f;
  int diff_exit = -1, audit_exit = -1;
  const TensorFidelity& tensor(const std::string& name) const {
    for (const TensorFidelity& t : f.tensors) {
      if (t.what.name == name) return t;
    }
    FAIL("no checkpoint tensor " << name);
    return f.tensors.front();
  }
};

Checked check(const std::string& model, const std::string& ckpt) {
  Checked c;
  Audit e = audit_file(model);
  Audit k = audit_file(ckpt);
  c.f = check_fidelity(e, model, k, ckpt);
  c.diff_exit = testutil::cli({"diff", model, ckpt, "--fail-on-change"}).code;
  c.audit_exit = testutil::cli({"audit", model, "--checkpoint", ckpt}).code;
  return c;
}

// One value changed: `name` is "changed", 1 element differs, at element `at`, by 100, in `layout`.
void check_one_changed(const Checked& c, const std::string& name, uint64_t at, Layout layout) {
  const TensorFidelity& t = c.tensor(name);
  INFO(name << ": " << c.f.outcome);
  CHECK(t.verdict == Verdict::Changed);
  CHECK(t.differing == 1);
  CHECK(t.largest_at == at);
  CHECK(t.largest == 100.0);
  REQUIRE(t.held.size() == 1);
  CHECK(t.held[0].layout == layout);
  CHECK(c.f.failed());
  CHECK(c.diff_exit == 1);
  CHECK(c.audit_exit == 1);
}

// The same tensor with element `at` (row-major) + 100.
T changed_at(T t, uint64_t at) {
  t.values[static_cast<size_t>(at)] += 100;
  return t;
}

// [r, c] -> [c, r]
T transposed(const T& t) {
  const uint64_t r = static_cast<uint64_t>(t.dims[0]), c = static_cast<uint64_t>(t.dims[1]);
  T out{t.name, {t.dims[1], t.dims[0]}, std::vector<float>(t.values.size())};
  for (uint64_t i = 0; i < r; ++i) {
    for (uint64_t j = 0; j < c; ++j) out.values[static_cast<size_t>(j * r + i)] = t.values[static_cast<size_t>(i * c + j)];
  }
  return out;
}

}  // namespace

TEST_CASE("export check, as stored: one value changed at each rank fails the gate", "[fidelity][ranks]") {
  // The changed element is the last but one: n - 2 of n. 0-d: the only element, 0.
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {3, 4}, {2, 3, 4}, {2, 3, 2, 2}};
  for (const auto& dims : shapes) {
    const uint64_t n = count(dims), at = n == 1 ? 0 : n - 2;  // 1, 5, 12, 24, 24 elements
    SECTION("rank " + std::to_string(dims.size())) {
      testutil::TempDir dir;
      T w = iota("w", dims);
      Checked c = check(write_export(dir, {changed_at(w, at)}), write_safetensors(dir, {w}));
      check_one_changed(c, "w", at, Layout::Same);
    }
  }
}

TEST_CASE("export check, transposed: a matrix with one value changed fails the gate; other ranks are not transposed", "[fidelity][ranks]") {
  SECTION("rank 2: [3, 4] stored as [4, 3]") {
    // Checkpoint element (1, 2) = 1 · 4 + 2 = 6 is the export's (2, 1) = 2 · 3 + 1 = 7.
    testutil::TempDir dir;
    T w = iota("w", {3, 4});
    Checked c = check(write_export(dir, {changed_at(transposed(w), 7)}), write_safetensors(dir, {w}));
    check_one_changed(c, "w", 6, Layout::Transposed);
  }
  SECTION("rank 3: [2, 3, 4] against its axes reversed, [4, 3, 2], is compared reshaped and changed") {
    // No transposed pairing for three dims: element (a, b, c) sits at a·12 + b·4 + c in the
    // checkpoint and (c, b, a) at c·6 + b·2 + a in the export; compared element for element, the
    // values differ wherever the two positions differ. They agree where a·12 + b·4 + c = c·6 +
    // b·2 + a, i.e. 11a + 2b = 5c: (0, 0, 0) and (1, 2, 3) (11 + 4 = 15), 2 of 24; 22 differ.
    testutil::TempDir dir;
    T w = iota("w", {2, 3, 4});
    T r{"w", {4, 3, 2}, std::vector<float>(24)};
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < 3; ++b) {
        for (int k = 0; k < 4; ++k) r.values[static_cast<size_t>(k * 6 + b * 2 + a)] = w.values[static_cast<size_t>(a * 12 + b * 4 + k)];
      }
    }
    Checked c = check(write_export(dir, {r}), write_safetensors(dir, {w}));
    const TensorFidelity& t = c.tensor("w");
    CHECK(t.verdict == Verdict::Changed);
    CHECK(t.differing == 22);
    REQUIRE(t.held.size() == 1);
    CHECK(t.held[0].layout == Layout::Reshaped);
    CHECK(c.diff_exit == 1);
    CHECK(c.audit_exit == 1);
  }
}

TEST_CASE("export check, reshaped: one value changed at each rank fails the gate", "[fidelity][ranks]") {
  // The export holds the same elements in the same order under another shape; element n - 2 changed.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> pairs = {
      {{}, {1, 1}}, {{6}, {2, 3}}, {{3, 4}, {12}}, {{2, 3, 4}, {4, 6}}, {{2, 3, 2, 2}, {3, 8}}};
  for (const auto& [dims, as] : pairs) {
    const uint64_t n = count(dims), at = n == 1 ? 0 : n - 2;
    SECTION("rank " + std::to_string(dims.size())) {
      testutil::TempDir dir;
      T w = iota("w", dims);
      T e = changed_at(w, at);
      e.dims = as;
      Checked c = check(write_export(dir, {e}), write_safetensors(dir, {w}));
      // A 0-d tensor against [1, 1] is the same shape once dims of 1 are set aside: as stored.
      check_one_changed(c, "w", at, dims.empty() ? Layout::Same : Layout::Reshaped);
    }
  }
}

TEST_CASE("export check, packed rows: q, k, v in one tensor, q with one value changed, fails the gate", "[fidelity][ranks]") {
  // The export's qkv is [3·d0, ...]: q's elements, then k's, then v's. k and v are folded (rows
  // n..2n and 2n..3n of the export's elements); q, one value changed, is nowhere and pairs with no
  // tensor of its size: lost, which fails the gate. (A 0-d tensor cannot be a run of rows: it is
  // lost too, as are k and v.)
  const std::vector<std::vector<int64_t>> shapes = {{}, {4}, {2, 3}, {2, 2, 3}, {2, 2, 2, 3}};
  for (const auto& dims : shapes) {
    const uint64_t n = count(dims);
    SECTION("rank " + std::to_string(dims.size())) {
      testutil::TempDir dir;
      T q = iota("q", dims), k = iota("k", dims, 100), v = iota("v", dims, 200);
      std::vector<int64_t> packed = dims.empty() ? std::vector<int64_t>{3} : dims;
      packed[0] *= dims.empty() ? 1 : 3;
      T qkv{"qkv", packed, {}};
      for (const T* t : {&q, &k, &v}) qkv.values.insert(qkv.values.end(), t->values.begin(), t->values.end());
      qkv.values[static_cast<size_t>(n - 1)] += 100;  // q's last element
      Checked c = check(write_export(dir, {qkv}), write_safetensors(dir, {q, k, v}));
      INFO(c.f.outcome);
      CHECK(c.tensor("q").verdict == Verdict::Lost);
      if (!dims.empty()) {
        for (const auto& [name, start] : {std::make_pair("k", uint64_t{1}), std::make_pair("v", uint64_t{2})}) {
          const TensorFidelity& t = c.tensor(name);
          CHECK(t.verdict == Verdict::Folded);
          REQUIRE(t.held.size() == 1);
          CHECK(t.held[0].layout == Layout::Rows);
          CHECK(t.held[0].start == start * static_cast<uint64_t>(dims[0]));  // in rows of the packed tensor
        }
      }
      CHECK(c.f.failed());
      CHECK(c.diff_exit == 1);
      CHECK(c.audit_exit == 1);
    }
  }
}

TEST_CASE("export check, packed columns: q, k, v [2, 3] as columns of one [3, 6], q with one value changed", "[fidelity][ranks]") {
  // The export is [in, 3·out]: its (i, s + o) is q's, k's or v's (o, i) for s = 0, 2, 4. Only a
  // matrix packs into columns. q's (1, 2) (export (2, 1), element 2 · 6 + 1 = 13) changed: q lost,
  // k and v folded as columns 2..4 and 4..6.
  testutil::TempDir dir;
  T q = iota("q", {2, 3}), k = iota("k", {2, 3}, 100), v = iota("v", {2, 3}, 200);
  T qkv{"qkv", {3, 6}, std::vector<float>(18)};
  for (int s = 0; s < 3; ++s) {
    const T& t = s == 0 ? q : s == 1 ? k : v;
    for (int o = 0; o < 2; ++o) {
      for (int i = 0; i < 3; ++i) qkv.values[static_cast<size_t>(i * 6 + s * 2 + o)] = t.values[static_cast<size_t>(o * 3 + i)];
    }
  }
  qkv.values[13] += 100;
  Checked c = check(write_export(dir, {qkv}), write_safetensors(dir, {q, k, v}));
  INFO(c.f.outcome);
  CHECK(c.tensor("q").verdict == Verdict::Lost);
  for (const auto& [name, start] : {std::make_pair("k", uint64_t{2}), std::make_pair("v", uint64_t{4})}) {
    const TensorFidelity& t = c.tensor(name);
    CHECK(t.verdict == Verdict::Folded);
    REQUIRE(t.held.size() == 1);
    CHECK(t.held[0].layout == Layout::Columns);
    CHECK(t.held[0].start == start);
    CHECK(t.held[0].end == start + 2);
  }
  CHECK(c.diff_exit == 1);
  CHECK(c.audit_exit == 1);
}

TEST_CASE("export check, rotary rows: a GGUF Q with one value changed fails the gate at every rank", "[fidelity][ranks]") {
  // llama.cpp stores row 2j + t of a head of 4 rows as the model's row 2t + j: GGUF rows 0, 1, 2,
  // 3 are model rows 0, 2, 1, 3. K, V and O are constant tensors of Q's shape (the same in any
  // row order), kept.
  auto others = [](const std::vector<int64_t>& dims) {
    std::vector<T> out;
    for (const auto& [name, value] : {std::make_pair("blk.0.attn_k.weight", 2.5f), std::make_pair("blk.0.attn_v.weight", 3.25f),
                                      std::make_pair("blk.0.attn_output.weight", 5.0f)}) {
      out.push_back(T{name, dims, std::vector<float>(count(dims), value)});
    }
    return out;
  };
  auto run = [&](const T& stored, const T& exported, uint32_t heads) {
    testutil::TempDir dir;
    std::vector<T> ck = others(stored.dims), ex = others(exported.dims);
    ck.insert(ck.begin(), stored);
    ex.insert(ex.begin(), exported);
    return check(write_export(dir, ex), write_gguf(dir, ck, heads));
  };
  // The model's Q [4, 2] = 1..8, one head; the GGUF stores its rows 0, 2, 1, 3.
  T model_q = iota("blk.0.attn_q.weight", {4, 2});
  T stored{model_q.name, {4, 2}, {1, 2, 5, 6, 3, 4, 7, 8}};
  SECTION("rank 2, the export as stored: model row 2, column 1 changed (GGUF row 1: element 3)") {
    check_one_changed(run(stored, changed_at(model_q, 2 * 2 + 1), 1), model_q.name, 3, Layout::Rotary);
  }
  SECTION("rank 2, the export transposed [2, 4]: model (2, 1) is its (1, 2), element 6 (GGUF element 3)") {
    check_one_changed(run(stored, changed_at(transposed(model_q), 1 * 4 + 2), 1), model_q.name, 3, Layout::RotaryTransposed);
  }
  SECTION("rank 2, the same matrix unchanged is kept in rotary rows") {
    Checked c = run(stored, model_q, 1);
    const TensorFidelity& t = c.tensor(model_q.name);
    CHECK(t.verdict == Verdict::Kept);
    REQUIRE(t.held.size() == 1);
    CHECK(t.held[0].layout == Layout::Rotary);
    CHECK(c.diff_exit == 0);
    CHECK(c.audit_exit == 0);
  }
  // Not a matrix: no rotary order applies, the tensor is compared as stored, every element.
  // Element n - 2 changed ([1]: element 0); one head, so the first dim is even "rows of a head"
  // for [2, 2, 2] and [2, 2, 2, 2], whose old retry compared 2 x 2 elements, the first 4.
  const std::vector<std::vector<int64_t>> shapes = {{1}, {4}, {2, 2, 2}, {2, 2, 2, 2}};
  for (const auto& dims : shapes) {
    const uint64_t n = count(dims), at = n == 1 ? 0 : n - 2;
    SECTION("rank " + std::to_string(dims.size()) + " of " + std::to_string(n) + " elements") {
      T q = iota(model_q.name, dims);
      check_one_changed(run(q, changed_at(q, at), 1), q.name, at, Layout::Same);
    }
  }
}
