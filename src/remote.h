// remote.h: where a remote input is (internal): `hf://ORG/REPO[@REVISION][/PATH]` on the Hugging
// Face Hub (the convention of huggingface_hub's file system), or an http(s) URL of one file.
//
// The Hub's endpoint is HF_ENDPOINT (default https://huggingface.co); its token HF_TOKEN, else the
// file huggingface_hub writes ($HF_HOME/token, HF_HOME defaulting to ~/.cache/huggingface). A repo's
// files come from its model API (`/api/models/ORG/REPO/tree/REV?recursive=true`: paths and
// sizes), a file from `/ORG/REPO/resolve/REV/PATH`. Every name a remote file gives (a shard, a
// split part) is one more path inside the same repo and revision, or refused: no `..`, no
// absolute path, no URL; each segment is escaped whole, so a percent sign is only a percent sign.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "source.h"
#include "headcount/load.h"
#include "headcount/model.h"
#include "headcount/results/audit.h"
#include "http.h"

namespace headcount::remote {

// Whether `input` names a remote input (hf://, http://, https://) rather than a local path.
bool is_remote(const std::string& input);

struct HubId {
  std::string org, repo;
  std::string revision = "main";
  std::string path;  // "" for the repo itself; else '/'-separated, checked
};

// `input` as a Hub id: nullopt when it does not start with hf://; InputError when it does and is
// not one ("hf://ORG/REPO[@REVISION][/PATH]: ...").
std::optional<HubId> parse_hub_id(const std::string& input);

struct Hub {
  std::string endpoint = "https://huggingface.co";  // no trailing '/'
  std::string token;                                 // "" when there is none
};

// The endpoint and the token, from the environment and the token file.
Hub hub_from_environment();

// The URL of a file of the repo at the revision; `path` is checked as a path inside the repo
// (InputError: "names a file outside the repository").
std::string file_url(const Hub& hub, const HubId& id, const std::string& path);
// The model API's URL listing every file of the repo at the revision, with sizes.
std::string tree_url(const Hub& hub, const HubId& id);

// `name` (a shard an index names, a split part) beside `path` in the repo: the path it names, or
// InputError when it would leave the repo (an absolute path, a URL, a '..' segment, a backslash).
std::string beside(const std::string& path, const std::string& name);

struct RepoFile {
  std::string path;
  uint64_t size = 0;
};

// The files of the repo at the revision (its model API's tree), every page of it (a Link header's
// rel="next", followed only within the Hub's model API). At most 100,000 files in 200 pages and
// 16 MiB, or an error: a list cut short would call a file that is there missing. Each path checked.
std::vector<RepoFile> list_files(http::Client& client, const Hub& hub, const HubId& id);

// The file to audit in a repo named without a path: model.safetensors.index.json, else
// model.safetensors. InputError when there is neither, listing the repo's candidates (.gguf,
// .onnx, .safetensors and indexes) with the hf:// id of each, so the user can name one.
std::string choose_file(const std::vector<RepoFile>& files, const HubId& id);

// An HttpError from the Hub as the user needs to read it: what is missing (the repo, the
// revision or the file) or that a token is needed, with the id. The token is never in it.
std::string hub_error(const http::HttpError& e, const Hub& hub, const HubId& id, const std::string& path);

// A Hub id as the user writes it: "hf://org/repo@rev/path" (the revision only when not main).
std::string hub_text(const HubId& id, const std::string& path);

// A remote file read by range requests: reads that fall in the window of the last fetch share it;
// each miss fetches from its offset a window twice as long as the last (64 KiB, up to 8 MiB), so a
// header read field by field (GGUF's metadata) costs a few requests, not one per field.
class RemoteSource : public ByteSource {
 public:
  // Fetches the first window, which says the file's size.
  RemoteSource(http::Client& client, std::string url, std::string name);
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, uint64_t length, void* out) const override;
  const std::string& name() const override { return name_; }

 private:
  http::Client& client_;
  std::string url_, name_;
  uint64_t size_ = 0;
  mutable uint64_t start_ = 0, next_;
  mutable std::string window_;
};

// The files beside a remote file (an index's shards, a split GGUF's parts): `url_of` turns a path
// of the repo (or of the URL's folder) into its URL; every name is checked by beside() first.
class RemoteFolder : public SourceFolder {
 public:
  // `list`: the files of the repo (list_files), null when the host lists none (a plain URL).
  RemoteFolder(http::Client& client, std::function<std::string(const std::string&)> url_of, std::string path,
               std::string shown, std::function<const std::vector<RepoFile>&()> list = nullptr)
      : client_(client), url_of_(std::move(url_of)), list_(std::move(list)), path_(std::move(path)),
        shown_(std::move(shown)) {}
  bool holds(const std::string& name) const override;
  bool exists(const std::string&) const override { return true; }  // a missing file is the host's 404
  std::unique_ptr<ByteSource> open(const std::string& name, const char* directory) const override;
  // The repo's files in the first file's folder and below it, from the repo's listing.
  bool list(std::map<std::string, uint64_t>* sizes) const override;
  // The first file, already opened (its first window read to learn its format): the next open()
  // of it returns this one rather than fetching that window again.
  void keep_first(std::unique_ptr<ByteSource> file) { first_ = std::move(file); }

 private:
  http::Client& client_;
  std::function<std::string(const std::string&)> url_of_;
  std::function<const std::vector<RepoFile>&()> list_;
  std::string path_, shown_;  // the first file's path (in the repo or the URL) and how it is shown
  mutable std::unique_ptr<ByteSource> first_;
};

// A remote input read: its model, the config.json beside it when there is one, and where and how
// much was read.
struct Fetched {
  Model model;
  std::string config_text;   // "" when there is none
  std::string config_name;   // how the config is shown
  std::string adapter_config_text, adapter_config_name;  // a LoRA adapter's adapter_config.json
  RemoteRead read;
};

// Reads a remote input (a Hub id or an http(s) URL of one safetensors file, index, GGUF or ONNX
// file) through a client of `options` (the Hub's token is added for a Hub id, never for a URL);
// an ONNX file is read with `load`, its external data checked against the repo's listing. Throws
// InputError with what is wrong, worded for the Hub where it applies.
Fetched fetch_model(const std::string& input, http::Options options, const LoadOptions& load = {});

}  // namespace headcount::remote
