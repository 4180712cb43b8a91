// safetensors.cpp: the safetensors reader (see headcount/checkpoint.h). The header is read with
// nlohmann-json's SAX interface, so a hostile header never becomes a document: what it keeps is a
// list of tensors, each checked against the file before the next stage sees it.
#include <algorithm>
#include <filesystem>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "checkpoint/readers.h"
#include "headcount/checked.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "paths.h"

namespace headcount {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The safetensors library refuses headers above 100 MB; so does headcount.
constexpr uint64_t kMostHeaderBytes = 100'000'000;
// Real tensors have a handful of dimensions; a shape longer than this is refused, not stored.
constexpr size_t kMostRank = 16;
// An index file is a name -> shard map: a few MB for the largest models.
constexpr uint64_t kMostIndexBytes = 64u << 20;

// Bits per element of each dtype the format defines; 0 for a name it does not.
int dtype_bits(const std::string& d) {
  const CheckpointDtype* t = checkpoint_dtype(d);
  return t ? t->bits : 0;
}

struct RawTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint64_t> offsets;
  bool has_dtype = false, has_shape = false, has_offsets = false;
};

// The header's events, depth by depth: {name: {"dtype": s, "shape": [n...], "data_offsets": [a, b]},
// "__metadata__": {key: string}}. Anything else is an error that says where.
class HeaderReader : public nlohmann::json_sax<json> {
 public:
  std::vector<RawTensor> tensors;
  std::map<std::string, CheckpointValue> metadata;
  std::string error;

  bool null() override {
    // MLX writes "__metadata__": null, which the format's own reader takes as no metadata.
    if (depth_ == 1 && key_ == "__metadata__") {
      if (seen_metadata_) return fail("a second \"__metadata__\"");
      seen_metadata_ = true;
      return true;
    }
    return fail("a null value where the format has none");
  }
  bool boolean(bool) override { return fail("a boolean value where the format has none"); }
  bool number_integer(number_integer_t v) override {
    if (v < 0) return fail("a negative number (" + std::to_string(v) + ") where a size or offset belongs");
    return number(static_cast<uint64_t>(v));
  }
  bool number_unsigned(number_unsigned_t v) override { return number(v); }
  bool number_float(number_float_t, const string_t& s) override {
    return fail("a fractional number (" + s + ") where a size or offset belongs");
  }
  bool binary(binary_t&) override { return fail("binary data"); }
  bool string(string_t& s) override {
    if (depth_ == 2 && in_metadata_) {
      CheckpointValue v;
      v.type = CheckpointValue::Type::String;
      v.type_name = "string";
      v.s = std::move(s);
      metadata[key_] = std::move(v);
      return true;
    }
    if (depth_ == 2 && field_ == "dtype") {
      tensors.back().dtype = std::move(s);
      tensors.back().has_dtype = true;
      return true;
    }
    return fail("a string where the format has none");
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) return enter();
    if (depth_ == 1) {
      if (key_ == "__metadata__") {
        if (seen_metadata_) return fail("a second \"__metadata__\"");
        seen_metadata_ = in_metadata_ = true;
        return enter();
      }
      if (!names_.insert(key_).second) return fail("tensor '" + key_ + "' named twice");
      tensors.emplace_back();
      tensors.back().name = key_;
      in_metadata_ = false;
      return enter();
    }
    return fail("an object nested deeper than the format allows");
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 1 && !in_metadata_) {
      const RawTensor& t = tensors.back();
      if (!t.has_dtype || !t.has_shape || !t.has_offsets) {
        return fail("tensor '" + t.name + "' lacks " + (!t.has_dtype ? "\"dtype\"" : !t.has_shape ? "\"shape\"" : "\"data_offsets\""));
      }
    }
    if (depth_ == 1) in_metadata_ = false;
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ != 2 || in_metadata_) return fail("an array where the format has none");
    RawTensor& t = tensors.back();
    if (field_ == "shape") {
      if (t.has_shape) return fail("tensor '" + t.name + "' has two shapes");
      t.has_shape = true;
    } else if (field_ == "data_offsets") {
      if (t.has_offsets) return fail("tensor '" + t.name + "' has two \"data_offsets\"");
      t.has_offsets = true;
    } else {
      return fail("an array where the format has none");
    }
    return enter();
  }
  bool end_array() override {
    --depth_;
    RawTensor& t = tensors.back();
    if (field_ == "data_offsets" && t.offsets.size() != 2) {
      return fail("tensor '" + t.name + "' has " + std::to_string(t.offsets.size()) + " data offsets, not 2");
    }
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      key_ = std::move(k);
      return true;
    }
    if (depth_ == 2 && in_metadata_) {
      if (metadata.count(k)) return fail("metadata key '" + k + "' given twice");
      key_ = std::move(k);
      return true;
    }
    if (depth_ == 2) {
      if (k != "dtype" && k != "shape" && k != "data_offsets") {
        return fail("tensor '" + tensors.back().name + "' has the field '" + k + "', which the format does not define");
      }
      if (k == "dtype" && tensors.back().has_dtype) return fail("tensor '" + tensors.back().name + "' has two dtypes");
      field_ = std::move(k);
      return true;
    }
    return fail("a key where the format has none");
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    if (error.empty()) {
      std::string what = e.what();
      size_t colon = what.rfind(": ");
      error = "the header is not valid JSON at byte " + std::to_string(position) +
              (colon == std::string::npos ? "" : ": " + what.substr(colon + 2));
    }
    return false;
  }

 private:
  int depth_ = 0;
  bool in_metadata_ = false, seen_metadata_ = false;
  std::string key_, field_;
  std::set<std::string> names_;

  bool enter() {
    ++depth_;
    return true;
  }
  // Stops the parse with what is wrong: a whole sentence when it starts with "tensor", "metadata"
  // or "a second", else what the header holds that the format does not allow.
  bool fail(const std::string& what) {
    bool sentence = what.rfind("tensor ", 0) == 0 || what.rfind("metadata ", 0) == 0;
    if (error.empty()) error = sentence ? what : "the header holds " + what;
    return false;
  }
  bool number(uint64_t v) {
    if (depth_ != 3) return fail("a number where the format has none");
    RawTensor& t = tensors.back();
    if (field_ == "shape") {
      if (t.shape.size() >= kMostRank) return fail("tensor '" + t.name + "' with more than " + std::to_string(kMostRank) + " dimensions");
      if (v > static_cast<uint64_t>(INT64_MAX)) return fail("tensor '" + t.name + "' with a dimension of " + std::to_string(v));
      t.shape.push_back(static_cast<int64_t>(v));
      return true;
    }
    if (t.offsets.size() >= 2) return fail("tensor '" + t.name + "' with more than 2 data offsets");
    t.offsets.push_back(v);
    return true;
  }
};

// The header's tensors, each checked against the data (`data_size` bytes from `data_start`),
// added to c; then the data must be covered exactly: tensor after tensor, no overlap, no hole,
// nothing after.
void add_tensors(HeaderReader& r, uint64_t data_size, uint64_t data_start, int file, Checkpoint& c) {
  std::vector<std::pair<uint64_t, size_t>> by_offset;  // (begin, index into c.tensors)
  for (RawTensor& t : r.tensors) {
    int bits = dtype_bits(t.dtype);
    if (bits == 0) throw InputError("tensor '" + t.name + "' has the dtype '" + t.dtype + "', which headcount does not know");
    uint64_t elements = 1;
    for (int64_t d : t.shape) {
      if (mul_overflows(elements, static_cast<uint64_t>(d), &elements)) {
        throw InputError("tensor '" + t.name + "': the element count of its shape overflows 64 bits");
      }
    }
    uint64_t whole = 0;
    if (mul_overflows(elements / 8, static_cast<uint64_t>(bits), &whole)) {
      throw InputError("tensor '" + t.name + "': its size in bytes overflows 64 bits");
    }
    if (elements % 8 * static_cast<uint64_t>(bits) % 8 != 0) {
      throw InputError("tensor '" + t.name + "': " + std::to_string(elements) + " elements of " + t.dtype + " do not fill whole bytes");
    }
    uint64_t bytes = whole + elements % 8 * static_cast<uint64_t>(bits) / 8;
    uint64_t begin = t.offsets[0], end = t.offsets[1];
    if (end < begin) {
      throw InputError("tensor '" + t.name + "': its data offsets end (" + std::to_string(end) + ") before they begin (" +
                       std::to_string(begin) + ")");
    }
    if (end - begin != bytes) {
      throw InputError("tensor '" + t.name + "': its data offsets span " + std::to_string(end - begin) + " bytes, but " +
                       std::to_string(elements) + " elements of " + t.dtype + " take " + std::to_string(bytes));
    }
    if (end > data_size) {
      throw InputError("tensor '" + t.name + "': its data ends at byte " + std::to_string(end) + " of the data, past its end (" +
                       std::to_string(data_size) + " bytes)");
    }
    CheckpointTensor ct;
    ct.name = std::move(t.name);
    ct.dtype = std::move(t.dtype);
    ct.shape = std::move(t.shape);
    ct.elements = elements;
    ct.bytes = bytes;
    ct.offset = data_start + begin;
    ct.file = file;
    by_offset.emplace_back(begin, c.tensors.size());
    c.tensors.push_back(std::move(ct));
  }
  std::sort(by_offset.begin(), by_offset.end());
  uint64_t at = 0;
  for (const auto& [begin, i] : by_offset) {
    const CheckpointTensor& t = c.tensors[i];
    if (begin < at) throw InputError("tensor '" + t.name + "' overlaps the tensor before it in the data");
    if (begin > at) {
      throw InputError("the data has a hole of " + std::to_string(begin - at) + " bytes before tensor '" + t.name + "'");
    }
    at = begin + t.bytes;
  }
  if (at != data_size) {
    throw InputError("the data holds " + std::to_string(data_size - at) + " bytes after its last tensor that no tensor describes");
  }
}

// An index's "metadata": total_size as a byte count, anything else kept as a string.
void read_index_metadata(const json& md, Checkpoint& c) {
  if (!md.is_object()) throw InputError("the index's \"metadata\" is not an object");
  for (const auto& [k, v] : md.items()) {
    if (k == "total_size") {
      if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
        throw InputError("the index's total_size is not a byte count");
      }
      c.declared_total_size = v.get<uint64_t>();
    } else {
      CheckpointValue cv;
      cv.type = CheckpointValue::Type::String;
      cv.type_name = "string";
      cv.s = v.is_string() ? v.get<std::string>() : v.dump();
      c.metadata["index." + k] = std::move(cv);
    }
  }
}

// One .safetensors file's tensors, checked against the file's size; `file` is its index. Two
// reads: the 8-byte length, then the header.
void read_file(const ByteSource& f, int file, Checkpoint& c) {
  unsigned char head[8];
  if (f.size() < 8) throw InputError("truncated: " + std::to_string(f.size()) + " bytes, fewer than the 8 of the header length");
  f.read(0, 8, head);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | head[i];
  if (n > f.size() - 8) {
    throw InputError("the header length " + std::to_string(n) + " runs past the end of the file (" + std::to_string(f.size()) + " bytes)");
  }
  if (n > kMostHeaderBytes) {
    throw InputError("the header length " + std::to_string(n) + " is above the format's limit of " + std::to_string(kMostHeaderBytes) + " bytes");
  }
  if (n < 2) throw InputError("the header is " + std::to_string(n) + " bytes long: not a JSON object");
  std::string header(static_cast<size_t>(n), '\0');
  f.read(8, n, header.data());
  if (header[0] != '{') throw InputError("the header does not start with '{': not a safetensors file");
  // The format pads the header with spaces to an 8-byte boundary: whitespace JSON skips.
  HeaderReader r;
  bool ok = json::sax_parse(header, &r, json::input_format_t::json, /*strict=*/true);
  if (!ok || !r.error.empty()) throw InputError(r.error.empty() ? "the header is not valid JSON" : r.error);
  add_tensors(r, f.size() - (8 + n), 8 + n, file, c);
  if (file == 0) c.metadata = std::move(r.metadata);
  c.files.push_back(f.name());
  c.file_sizes.push_back(f.size());
  c.file_ids.push_back(f.identity());
}

// A shard named by an index: a plain file name in the index's folder.
void check_shard_name(const SourceFolder& folder, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name.find('\0') != std::string::npos) {
    throw InputError("the index names the shard '" + name + "', which is not a file name in its folder");
  }
  // A shard is read only inside the index's folder: not through a symlink that leaves it.
  if (!folder.holds(name)) {
    throw InputError("the index names the shard '" + name + "', which resolves outside its folder");
  }
}

// An index's weight_map: each tensor's shard, and the shards in name order, each with the
// number of tensors the map gives it. Lookups are hashed: an index of 64,000 shards costs 64,000
// steps, not 64,000 squared.
struct WeightMap {
  std::unordered_map<std::string, std::string> where;  // tensor -> shard
  std::vector<std::string> shards;                     // sorted
  std::unordered_map<std::string, uint64_t> assigned;  // shard -> tensors the map gives it
};

WeightMap weight_map(const json& map) {
  WeightMap w;
  w.where.reserve(map.size());
  for (const auto& [name, shard] : map.items()) {
    if (!shard.is_string()) throw InputError("the index maps '" + name + "' to something other than a file name");
    const std::string& s = shard.get_ref<const std::string&>();
    w.where[name] = s;  // a name given twice: JSON's last value, as the parse kept it
    auto [it, fresh] = w.assigned.try_emplace(s, 0);
    if (fresh) {
      if (w.shards.size() >= 100000) throw InputError("the index names more than 100,000 shards");
      w.shards.push_back(s);
    }
  }
  for (const auto& [name, shard] : w.where) ++w.assigned[shard];
  std::sort(w.shards.begin(), w.shards.end());
  return w;
}

// Checks the tensors one shard added (from `first` on) against the map before the next shard is
// read: each is the map's, in this shard, once, and the shard holds all the map gives it. So the
// tensors kept never outnumber the map's entries, whatever the shards hold.
void check_shard(const WeightMap& w, const std::string& shard, const Checkpoint& data, size_t first,
                 std::unordered_set<std::string>& seen) {
  for (size_t i = first; i < data.tensors.size(); ++i) {
    const std::string& name = data.tensors[i].name;
    auto it = w.where.find(name);
    if (it == w.where.end()) throw InputError("tensor '" + name + "' of shard " + shard + " is not in the index's weight_map");
    if (it->second != shard) throw InputError("tensor '" + name + "' is in shard " + shard + ", where the index says " + it->second);
    if (!seen.insert(name).second) throw InputError("tensor '" + name + "' is in more than one shard");
  }
  if (data.tensors.size() - first == w.assigned.at(shard)) return;
  std::vector<std::string> missing;  // the first of them by name, as a sorted map would give it
  for (const auto& [name, s] : w.where) {
    if (s == shard && !seen.count(name)) missing.push_back(name);
  }
  const std::string& name = *std::min_element(missing.begin(), missing.end());
  throw InputError("the index maps '" + name + "' to " + shard + ", which does not hold it");
}

// The shards of an index, each read and checked before the next. One file under two names (a
// symlink, a hard link) is refused at the first: every tensor of a shard must be the map's for
// that shard, so the file holds tensors the map gives the other name. Its tensors are never
// counted twice, and what is kept never outgrows the map.
Checkpoint read_shards(const SourceFolder& folder, const WeightMap& w) {
  Checkpoint data;
  std::unordered_set<std::string> seen;
  for (const std::string& s : w.shards) {
    check_shard_name(folder, s);
    const size_t first = data.tensors.size();
    try {
      read_file(*folder.open(s, "is a directory, not a safetensors file"), static_cast<int>(data.files.size()) + 1, data);
    } catch (const InputError& e) {
      throw InputError("shard " + s + ": " + e.what());
    }
    check_shard(w, s, data, first, seen);
  }
  return data;
}

}  // namespace

Checkpoint read_safetensors_index(const ByteSource& f, const SourceFolder& folder) {
  if (f.size() > kMostIndexBytes) {
    throw InputError("the index is " + std::to_string(f.size()) + " bytes, above the " + std::to_string(kMostIndexBytes) + " an index can be");
  }
  std::string text(static_cast<size_t>(f.size()), '\0');
  f.read(0, f.size(), text.data());
  json doc;
  try {
    doc = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > 4) throw InputError("the index nests deeper than an index does");
      return true;
    });
  } catch (const json::exception& e) {
    std::string what = e.what();
    size_t colon = what.rfind(": ");
    throw InputError("the index is not valid JSON" + (colon == std::string::npos ? "" : ": " + what.substr(colon + 2)));
  }
  if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object()) {
    throw InputError("the index has no \"weight_map\" object");
  }
  for (const auto& [k, v] : doc.items()) {
    if (k != "weight_map" && k != "metadata") throw InputError("the index has the key '" + k + "', which headcount does not know");
  }
  Checkpoint c;
  c.kind = FormatKind::Safetensors;
  c.format = "safetensors";
  if (doc.contains("metadata")) read_index_metadata(doc["metadata"], c);
  const WeightMap w = weight_map(doc["weight_map"]);
  c.files.push_back(f.name());  // the index itself comes first
  c.file_sizes.push_back(f.size());
  c.file_ids.push_back(f.identity());
  Checkpoint data = read_shards(folder, w);
  for (auto& p : data.files) c.files.push_back(std::move(p));
  for (uint64_t s : data.file_sizes) c.file_sizes.push_back(s);
  for (const FileIdentity& id : data.file_ids) c.file_ids.push_back(id);
  c.tensors = std::move(data.tensors);
  if (!data.metadata.empty()) {
    for (auto& [k, v] : data.metadata) c.metadata.emplace(k, std::move(v));
  }
  return c;
}

Checkpoint read_safetensors(const ByteSource& file) {
  Checkpoint c;
  c.kind = FormatKind::Safetensors;
  c.format = "safetensors";
  read_file(file, 0, c);
  return c;
}

Checkpoint read_safetensors(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    fs::path dir(path);
    // What is wrong names the file the folder led to: "model.safetensors: is a FIFO, ...".
    auto in_folder = [](const fs::path& file) {
      try {
        return read_safetensors(file.string());
      } catch (const InputError& e) {
        throw InputError(file.filename().string() + ": " + e.what());
      }
    };
    if (fs::exists(dir / "model.safetensors.index.json", ec)) return in_folder(dir / "model.safetensors.index.json");
    if (fs::exists(dir / "model.safetensors", ec)) return in_folder(dir / "model.safetensors");
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      std::string name = e.path().filename().string();
      if (ends_with(name, ".safetensors.index.json") || (ends_with(name, ".safetensors") && name.find("-of-") == std::string::npos)) {
        found.push_back(e.path().string());
      }
      if (found.size() > 1) break;
    }
    if (found.size() == 1) return in_folder(found[0]);
    throw InputError(found.empty() ? "the folder holds no model.safetensors, model.safetensors.index.json or single .safetensors file"
                                   : "the folder holds more than one checkpoint; name the file");
  }
  if (ends_with(path, ".index.json")) {
    FileSource index(path, "is a directory, not an index");
    // The shards lie in the index's folder: "./NAME" when the index is named without one.
    fs::path folder = fs::path(path).parent_path();
    if (folder.empty()) folder = ".";
    return read_safetensors_index(index, LocalFolder(folder));
  }
  return read_safetensors(FileSource(path, "is a directory, not a safetensors file"));
}

}  // namespace headcount
