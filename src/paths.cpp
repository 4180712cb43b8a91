// paths.cpp: see paths.h.
#include "paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <vector>

#include "headcount/error.h"

namespace headcount {
namespace {

// What a file that is not a regular one is, for the error line.
const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Opens without blocking and fstats the descriptor: -1 with `why` set for anything that is not a
// regular file (a directory: why = "directory").
int open_checked(const std::string& path, FileIdentity* id, std::string* why) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    *why = std::string("cannot open: ") + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *why = std::string("cannot stat: ") + std::strerror(errno);
  } else if (S_ISDIR(st.st_mode)) {
    *why = "directory";
  } else if (!S_ISREG(st.st_mode)) {
    const char* kind = kind_of(st.st_mode);
    *why = std::string("is ") + kind + (std::strcmp(kind, "not a regular file") == 0 ? "" : ", not a regular file");
  } else {
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == 0) {
      id->device = static_cast<uint64_t>(st.st_dev);
      id->inode = static_cast<uint64_t>(st.st_ino);
      id->size = static_cast<uint64_t>(st.st_size);
      id->known = true;
      return fd;
    }
    *why = std::string("cannot read: ") + std::strerror(errno);
  }
  ::close(fd);
  return -1;
}

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

// The components of a location that names a file below its folder, else none with `why` set (the
// checks before anything is resolved, shared by resolve_inside and relative_inside).
std::vector<std::string> checked_parts(const std::string& location, std::string* why) {
  why->clear();
  if (location.find('\0') != std::string::npos) {
    *why = "contains a NUL byte";
  } else if (!location.empty() &&
             (location[0] == '/' || location[0] == '\\' || (location.size() > 1 && location[1] == ':'))) {
    *why = "is an absolute path";
  } else {
    std::vector<std::string> parts = path_parts(location);
    if (std::find(parts.begin(), parts.end(), "..") == parts.end()) return parts;
    *why = "contains '..'";
  }
  return {};
}

}  // namespace

RegularFile::RegularFile(const std::string& path, const char* directory) {
  std::string why;
  fd_ = open_checked(path, &id_, &why);
  if (fd_ < 0) throw InputError(why == "directory" ? (directory ? directory : "is a directory") : why);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

int RegularFile::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void RegularFile::read(uint64_t offset, void* out, uint64_t n) const {
  if (offset > size() || n > size() - offset) throw InputError("truncated: a read past the end of the file");
  char* to = static_cast<char*>(out);
  for (uint64_t done = 0; done < n;) {
    ssize_t got = ::pread(fd_, to + done, static_cast<size_t>(n - done), static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw InputError("cannot read " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                       (got == 0 ? " (the file shrank while it was read)" : ": " + std::string(std::strerror(errno))));
    }
    done += static_cast<uint64_t>(got);
  }
}

std::string RegularFile::read_all() const {
  std::string text(static_cast<size_t>(size()), '\0');
  read(0, text.data(), size());
  return text;
}

std::string read_named_file(const std::string& path, const std::string& what) {
  try {
    return RegularFile(path).read_all();
  } catch (const InputError& e) {
    const std::string why = e.what();
    throw InputError("cannot read " + what + " '" + path + "'" + (why.rfind("cannot open", 0) == 0 ? "" : ": it " + why));
  }
}

int reopen_regular(const std::string& path, const FileIdentity& expected) {
  FileIdentity now;
  std::string why;
  int fd = open_checked(path, &now, &why);
  if (fd >= 0 && expected.known && now != expected) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::filesystem::path resolve_inside(const std::string& root, const std::string& location, std::string* why) {
  auto refuse = [&](const char* what) {
    *why = what;
    return std::filesystem::path();
  };
  std::deque<std::string> todo;
  for (auto& part : checked_parts(location, why)) todo.push_back(part);
  if (!why->empty()) return {};
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

std::string relative_inside(const std::string& location, std::string* why) {
  std::string out;
  for (const std::string& part : checked_parts(location, why)) {
    if (part != ".") out += (out.empty() ? "" : "/") + part;
  }
  if (why->empty() && out.empty()) *why = "names no file";
  return out;
}

std::string percent_encoded(const std::string& s, bool keep_slashes) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slashes && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace headcount
