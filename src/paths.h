// paths.h: proving that a path a file names stays inside a folder (internal).
#pragma once

#include <filesystem>
#include <string>

namespace headcount {

// Resolves `location` (relative, '/' or '\\' separated) below the folder `root` (already
// canonical) without touching anything outside it: only paths inside the folder are lstat'ed, and
// symlinks are followed by reading them. Returns the resolved path, or sets `why` (what is wrong
// with the location: "is an absolute path", "contains '..'", "resolves through a symlink outside
// the model's folder" ...) and returns an empty path. One pass over the components: a location of
// 16,000 components costs 16,000 steps, not 16,000 rebuilt paths.
std::filesystem::path resolve_inside(const std::string& root, const std::string& location, std::string* why);

}  // namespace headcount
