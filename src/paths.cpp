// paths.cpp: see paths.h.
#include "paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <vector>

namespace headcount {
namespace {

// Splits a location on '/' and '\\' (Windows exporters write either).
std::vector<std::string> path_parts(const std::string& s) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : s) {
    if (c == '/' || c == '\\') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  return parts;
}

}  // namespace

std::filesystem::path resolve_inside(const std::string& root, const std::string& location, std::string* why) {
  auto refuse = [&](const char* what) {
    *why = what;
    return std::filesystem::path();
  };
  why->clear();
  if (location.find('\0') != std::string::npos) return refuse("contains a NUL byte");
  if (!location.empty() && (location[0] == '/' || location[0] == '\\' || (location.size() > 1 && location[1] == ':'))) {
    return refuse("is an absolute path");
  }
  std::deque<std::string> todo;
  for (auto& part : path_parts(location)) {
    if (part == "..") return refuse("contains '..'");
    todo.push_back(part);
  }
  // The path so far is one string that each component extends and '..' cuts back; once a
  // component cannot be lstat'ed nothing below it can, so the rest is not asked.
  std::string path = root;    // root and the components below it, joined as path's operator/ does
  std::vector<size_t> ends;   // per component below root: path's length before it
  size_t absent = SIZE_MAX;   // the number of the first component that could not be lstat'ed
  int hops = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (ends.empty()) return refuse("resolves through a symlink outside the model's folder");
      path.resize(ends.back());
      ends.pop_back();
      if (ends.size() <= absent) absent = SIZE_MAX;  // back above it: components are lstat'ed again
      continue;
    }
    ends.push_back(path.size());
    if (!path.empty() && path.back() != '/') path += '/';
    path += part;
    if (absent != SIZE_MAX) continue;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0) {
      absent = ends.size() - 1;
      continue;
    }
    if (!S_ISLNK(st.st_mode)) continue;
    if (++hops > 40) return refuse("has too many symlinks");
    std::string target(4096, '\0');
    ssize_t n = readlink(path.c_str(), target.data(), target.size());
    if (n < 0) return refuse("has an unreadable symlink");
    target.resize(static_cast<size_t>(n));
    path.resize(ends.back());  // the link itself is replaced by its target
    ends.pop_back();
    auto tparts = path_parts(target);
    if (!target.empty() && target[0] == '/') {
      // An absolute target is acceptable only when it points back inside the folder.
      auto rparts = path_parts(root);
      if (tparts.size() < rparts.size() || !std::equal(rparts.begin(), rparts.end(), tparts.begin())) {
        return refuse("resolves through a symlink outside the model's folder");
      }
      path = root;
      ends.clear();
      tparts.erase(tparts.begin(), tparts.begin() + static_cast<long>(rparts.size()));
    }
    todo.insert(todo.begin(), tparts.begin(), tparts.end());
  }
  return std::filesystem::path(std::move(path));
}

}  // namespace headcount
