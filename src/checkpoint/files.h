// checkpoint/files.h: the files of a checkpoint, opened through the one regular-file opener
// (paths.h), and the proof that a file a checkpoint names stays inside its folder.
#pragma once

#include <filesystem>
#include <string>

#include "paths.h"

namespace headcount::checkpoint {

using File = RegularFile;

// A folder as resolve_inside (paths.h) takes it: absolute and canonical; empty when it cannot be
// resolved. Computed once for all the shards or parts a checkpoint names.
inline std::filesystem::path folder_root(const std::filesystem::path& folder) {
  std::error_code ec;
  std::filesystem::path root = std::filesystem::weakly_canonical(std::filesystem::absolute(folder, ec), ec);
  return ec ? std::filesystem::path() : root;
}

// Whether the file `name` of the folder whose root is `root` (a shard, a split part) resolves
// inside that folder, proven as an ONNX model's external data is: nothing outside it is touched.
inline bool inside_root(const std::filesystem::path& root, const std::string& name) {
  if (root.empty()) return false;
  std::string why;
  resolve_inside(root.native(), name, &why);
  return why.empty();
}

inline bool inside_folder(const std::filesystem::path& folder, const std::string& name) {
  return inside_root(folder_root(folder), name);
}

}  // namespace headcount::checkpoint
