// file_identity.h: which file a reader read (device, inode, size), so that a later open of the
// same name can prove it still finds that file and not one put there since.
#pragma once

#include <cstdint>

namespace headcount {

struct FileIdentity {
  uint64_t device = 0, inode = 0, size = 0;
  bool known = false;  // false: never opened (a model read from memory), nothing to compare
  bool operator==(const FileIdentity& o) const {
    return known == o.known && device == o.device && inode == o.inode && size == o.size;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
  // The same file, whatever its size now: a second name of it (a symlink, a hard link).
  bool same_file(const FileIdentity& o) const { return known && o.known && device == o.device && inode == o.inode; }
};

}  // namespace headcount
