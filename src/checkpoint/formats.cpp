// checkpoint/formats.cpp: the table of formats (formats.h) and what checkpoint.h's
// checkpoint_format() asks of it.
#include "checkpoint/formats.h"

#include <cstring>
#include <optional>

#include "checkpoint/model.h"
#include "checkpoint/readers.h"
#include "headcount/checkpoint.h"
#include "headcount/error.h"
#include "paths.h"

namespace headcount {
namespace {

namespace fs = std::filesystem;

// A folder of safetensors: model.safetensors(.index.json), or any file named as one.
bool safetensors_folder(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / "model.safetensors.index.json", ec) || fs::exists(dir / "model.safetensors", ec)) return true;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (ends_with(name, ".safetensors") || ends_with(name, ".safetensors.index.json")) return true;
  }
  return false;
}

bool safetensors_name(const std::string& path) {
  return ends_with(path, ".safetensors") || ends_with(path, ".safetensors.index.json");
}

// An 8-byte little-endian header length that fits in the file, then the header's '{'.
bool safetensors_bytes(const char* data, uint64_t size) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | static_cast<unsigned char>(data[i]);
  return data[8] == '{' && n >= 2 && n <= size - 8;
}

bool gguf_name(const std::string& path) { return ends_with(path, ".gguf"); }

bool gguf_bytes(const char* data, uint64_t) { return std::memcmp(data, "GGUF", 4) == 0; }

Model open_safetensors(const std::string& path, const LoadOptions&) { return checkpoint_model(read_safetensors(path), path); }

Model open_gguf(const std::string& path, const LoadOptions&) { return checkpoint_model(read_gguf(path), path); }

Model open_onnx(const std::string& path, const LoadOptions& options) { return load_model(path, options); }

bool onnx_name(const std::string& path) { return ends_with(path, ".onnx"); }

// An ONNX file of a folder of byte sources: read through its source; its external data looked
// up in the folder's listing (asked once, at the first external tensor), never fetched.
Model onnx_in(const SourceFolder& folder, const std::string& name, const std::string& shown, const LoadOptions& options) {
  std::unique_ptr<ByteSource> file = folder.open(name, "is a directory, not an ONNX file");
  std::optional<ListedFiles> listed;
  LoadOptions o = options;
  o.listed_files = [&]() -> const ListedFiles& {
    if (!listed) {
      listed.emplace();
      listed->listed = folder.list(&listed->sizes);
    }
    return *listed;
  };
  Model m = load_model(*file, o);
  m.path = shown;
  return m;
}

Model safetensors_in(const SourceFolder& folder, const std::string& name, const std::string& shown, const LoadOptions&) {
  std::unique_ptr<ByteSource> file = folder.open(name, "is a directory, not a safetensors file");
  if (ends_with(name, ".index.json")) return checkpoint_model(read_safetensors_index(*file, folder), shown);
  return checkpoint_model(read_safetensors(*file), shown);
}

Model gguf_in(const SourceFolder& folder, const std::string& name, const std::string& shown, const LoadOptions&) {
  return checkpoint_model(read_gguf(folder, name), shown);
}

Model open_onnx_bytes(const char* data, uint64_t size, const std::string& name, const LoadOptions& options) {
  return load_model_bytes(data, size, name, options);
}

}  // namespace

const std::vector<FormatRow>& file_formats() {
  static const std::vector<FormatRow> rows = {
      {FormatKind::Onnx, "onnx", false, nullptr, onnx_name, nullptr, open_onnx, open_onnx_bytes, onnx_in},
      {FormatKind::Gguf, "gguf", true, nullptr, gguf_name, gguf_bytes, open_gguf, nullptr, gguf_in},
      {FormatKind::Safetensors, "safetensors", true, safetensors_folder, safetensors_name, safetensors_bytes,
       open_safetensors, nullptr, safetensors_in},
  };
  return rows;
}

const FormatRow& format_row(FormatKind kind) {
  for (const FormatRow& r : file_formats()) {
    if (r.kind == kind) return r;
  }
  throw std::logic_error("a format kind without a row");
}

const FormatRow& format_of_bytes(const char* data, uint64_t size) {
  if (size >= kFormatHeadBytes) {
    for (const FormatRow& r : file_formats()) {
      if (r.by_bytes && r.by_bytes(data, size)) return r;
    }
  }
  return format_row(FormatKind::Onnx);
}

const FormatRow& format_of(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const FormatRow& r : file_formats()) {
      if (r.in_folder && r.in_folder(fs::path(path))) return r;
    }
    return format_row(FormatKind::Onnx);
  }
  for (const FormatRow& r : file_formats()) {
    if (r.by_name && r.by_name(path)) return r;
  }
  try {
    RegularFile f(path);
    char head[kFormatHeadBytes] = {};
    if (f.size() < kFormatHeadBytes) return format_row(FormatKind::Onnx);
    f.read(0, head, kFormatHeadBytes);
    return format_of_bytes(head, f.size());
  } catch (const InputError&) {
    return format_row(FormatKind::Onnx);
  }
}

std::string checkpoint_format(const std::string& path) {
  const FormatRow& r = format_of(path);
  return r.checkpoint ? r.name : "";
}

std::string checkpoint_format_of(const char* data, uint64_t size) {
  const FormatRow& r = format_of_bytes(data, size);
  return r.checkpoint ? r.name : "";
}

}  // namespace headcount
