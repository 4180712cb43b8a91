// remote.cpp: Hub ids, URLs, a repo's files and the file to audit (remote.h).
#include "remote.h"

#include <algorithm>
#include <cstring>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "checkpoint/formats.h"
#include "paths.h"

namespace headcount::remote {

namespace {

constexpr uint64_t kMostTree = uint64_t{16} << 20;  // the model API's file list
constexpr size_t kMostFiles = 100000;
constexpr size_t kMostPages = 200;  // of a file list (the Hub's pages hold 1,000 files or more)
constexpr size_t kMostPath = 1024;
constexpr size_t kListed = 20;
constexpr uint64_t kFirstWindow = uint64_t{64} << 10;
constexpr uint64_t kJumpWindow = uint64_t{16} << 10;
constexpr uint64_t kLargestWindow = uint64_t{8} << 20;
constexpr uint64_t kMostConfig = uint64_t{16} << 20;  // as a local config.json  // candidates named in the error of a repo without a default file

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; }

// An org or repo name: letters, digits, - _ . ; not "." or "..".
bool good_name(const std::string& s) {
  return !s.empty() && s.size() <= 96 && s != "." && s != ".." && std::all_of(s.begin(), s.end(), name_char);
}

// The segments of a '/'-separated path inside a repo; empty when it is not one.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty() || path.size() > kMostPath) return {};
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string seg = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (seg.empty() || seg == "." || seg == ".." || seg.find('\\') != std::string::npos) return {};
    if (std::any_of(seg.begin(), seg.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; })) return {};
    out.push_back(seg);
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return out;
}

std::string escaped_path(const std::string& path) {
  std::string out;
  for (const std::string& seg : segments(path)) out += (out.empty() ? "" : "/") + percent_encoded(seg, false);
  return out;
}

std::string size_text(uint64_t bytes) {
  const char* units[] = {"bytes", "KB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

std::string token_from_file() {
  const char* home = std::getenv("HF_HOME");
  std::filesystem::path dir;
  if (home && *home) {
    dir = home;
  } else if (const char* user = std::getenv("HOME"); user && *user) {
    dir = std::filesystem::path(user) / ".cache" / "huggingface";
  } else {
    return "";
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(dir / "token", ec)) return "";
  try {
    RegularFile f((dir / "token").string());
    if (f.size() > 4096) return "";
    std::string t = f.read_all();
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    return t;
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace

bool is_remote(const std::string& input) {
  return input.rfind("hf://", 0) == 0 || input.rfind("http://", 0) == 0 || input.rfind("https://", 0) == 0;
}

std::optional<HubId> parse_hub_id(const std::string& input) {
  if (input.rfind("hf://", 0) != 0) return std::nullopt;
  auto bad = [&](const std::string& why) {
    return InputError("'" + input + "' is not a Hub id hf://ORG/REPO[@REVISION][/PATH]: " + why);
  };
  std::string rest = input.substr(5);
  for (const char* kind : {"datasets/", "spaces/"}) {
    if (rest.rfind(kind, 0) == 0) throw bad("only model repositories can be audited");
  }
  size_t slash = rest.find('/');
  if (slash == std::string::npos) throw bad("it names no repository");
  HubId id;
  id.org = rest.substr(0, slash);
  rest = rest.substr(slash + 1);
  size_t end = rest.find_first_of("@/");
  id.repo = rest.substr(0, end);
  rest = end == std::string::npos ? "" : rest.substr(end);
  if (!good_name(id.org) || !good_name(id.repo)) throw bad("an org or repo name holds other than letters, digits, '-', '_' and '.'");
  if (!rest.empty() && rest[0] == '@') {
    size_t next = rest.find('/');
    std::string rev = rest.substr(1, next == std::string::npos ? std::string::npos : next - 1);
    for (size_t p; (p = rev.find("%2F")) != std::string::npos || (p = rev.find("%2f")) != std::string::npos;)
      rev.replace(p, 3, "/");  // refs/pr/1 is written refs%2Fpr%2F1
    if (segments(rev).empty() || rev.size() > 256 ||
        !std::all_of(rev.begin(), rev.end(), [](char c) { return name_char(c) || c == '/'; }))
      throw bad("the revision is not a branch, tag or commit name");
    id.revision = rev;
    rest = next == std::string::npos ? "" : rest.substr(next);
  }
  if (!rest.empty()) {
    id.path = rest.substr(1);
    if (!id.path.empty() && segments(id.path).empty()) throw bad("the path is not a path inside the repository");
  }
  return id;
}

Hub hub_from_environment() {
  Hub hub;
  if (const char* e = std::getenv("HF_ENDPOINT"); e && *e) {
    hub.endpoint = e;
    while (!hub.endpoint.empty() && hub.endpoint.back() == '/') hub.endpoint.pop_back();
  }
  if (const char* t = std::getenv("HF_TOKEN"); t && *t) hub.token = t;
  else hub.token = token_from_file();
  return hub;
}

std::string file_url(const Hub& hub, const HubId& id, const std::string& path) {
  std::string p = escaped_path(path);
  if (p.empty()) throw InputError("'" + path + "' names a file outside the repository");
  return hub.endpoint + "/" + id.org + "/" + id.repo + "/resolve/" + percent_encoded(id.revision, false) + "/" + p;
}

std::string tree_url(const Hub& hub, const HubId& id) {
  return hub.endpoint + "/api/models/" + id.org + "/" + id.repo + "/tree/" + percent_encoded(id.revision, false) +
         "?recursive=true";
}

std::string beside(const std::string& path, const std::string& name) {
  size_t slash = path.rfind('/');
  std::string joined = slash == std::string::npos ? name : path.substr(0, slash + 1) + name;
  if (name.find("://") != std::string::npos || segments(joined).empty())
    throw InputError("names '" + name + "', which is not a file beside it in the repository");
  return joined;
}

std::vector<RepoFile> list_files(http::Client& client, const Hub& hub, const HubId& id) {
  const std::string first = tree_url(hub, id);
  std::string url = first;
  std::vector<RepoFile> out;
  std::set<std::string> asked;
  uint64_t spent = 0;  // the pages' bytes, all bounded together
  // The Hub pages a long list (a Link header's rel="next"). A page is asked for only from the
  // Hub's own model API: the token goes with it, so a page elsewhere is refused, as is a loop.
  while (!url.empty()) {
    if (asked.count(url) || asked.size() == kMostPages)
      throw InputError(first + ": the Hub's file list does not end (" + std::to_string(asked.size()) +
                       (asked.size() == 1 ? " page" : " pages") + " read)");
    asked.insert(url);
    if (spent >= kMostTree) throw InputError(first + ": the Hub's file list is larger than 16 MiB");
    http::Head head;
    std::string body = client.whole(url, kMostTree - spent, &head);
    spent += body.size();
    nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_array()) throw InputError(url + ": the Hub's file list is not a JSON array");
    for (const auto& e : j) {
      if (out.size() >= kMostFiles)  // a list cut short would call a file missing that is there
        throw InputError(first + ": the Hub's file list holds more than " + std::to_string(kMostFiles) + " files");
      if (!e.is_object()) continue;
      const auto type = e.find("type");  // (value("type", "") throws on a type that is not a string)
      if (type == e.end() || !type->is_string() || type->get<std::string>() != "file") continue;
      const auto path = e.find("path");
      const auto size = e.find("size");
      if (path == e.end() || !path->is_string() || segments(path->get<std::string>()).empty()) continue;
      RepoFile f;
      f.path = path->get<std::string>();
      // A size that is not a count of bytes (-5, 1e30, "64") is no size: a file said to hold 0 bytes
      // would make its tensors' data "too short", a claim nothing proved.
      if (size == e.end() || !size->is_number_unsigned())
        throw InputError(url + ": the Hub's file list gives '" + f.path + "' no size in bytes");
      f.size = size->get<uint64_t>();
      out.push_back(std::move(f));
    }
    url = head.next;
    if (!url.empty() && url.rfind(hub.endpoint + "/api/models/", 0) != 0)
      throw InputError(first + ": the Hub's file list goes on at another address, which is not asked for");
  }
  return out;
}

std::string choose_file(const std::vector<RepoFile>& files, const HubId& id) {
  for (const char* name : {"model.safetensors.index.json", "model.safetensors"}) {
    for (const RepoFile& f : files)
      if (f.path == name) return f.path;
  }
  std::vector<const RepoFile*> candidates;  // a file a format recognises by its name (formats.h)
  for (const RepoFile& f : files) {
    for (const FormatRow& r : file_formats()) {
      if (r.by_name && r.by_name(f.path)) {
        candidates.push_back(&f);
        break;
      }
    }
  }
  std::string where = hub_text(id, "");
  if (candidates.empty()) throw InputError(where + " holds no model file (.safetensors, .gguf or .onnx)");
  if (candidates.size() == 1) return candidates[0]->path;
  std::string text = where + " holds no model.safetensors or model.safetensors.index.json; name one of its " +
                     std::to_string(candidates.size()) + " model files:";
  for (size_t i = 0; i < candidates.size() && i < kListed; ++i)
    text += " " + hub_text(id, candidates[i]->path) + " (" + size_text(candidates[i]->size) + ")" +
            (i + 1 < std::min(candidates.size(), kListed) ? "," : "");
  if (candidates.size() > kListed) text += " and " + std::to_string(candidates.size() - kListed) + " more";
  throw InputError(text);
}

std::string hub_text(const HubId& id, const std::string& path) {
  std::string s = "hf://" + id.org + "/" + id.repo;
  if (id.revision != "main") s += "@" + id.revision;
  if (!path.empty()) s += "/" + path;
  return s;
}

std::string hub_error(const http::HttpError& e, const Hub& hub, const HubId& id, const std::string& path) {
  std::string repo = id.org + "/" + id.repo;
  if (e.status() == 401 || e.status() == 403 || e.code() == "GatedRepo") {
    return "HTTP " + std::to_string(e.status()) + ": " + hub_text(id, path) + " is gated or private: " +
           (hub.token.empty() ? "set HF_TOKEN to a token that may read it"
                                                 : "the token in HF_TOKEN may not read it") +
           ", and accept the model's terms on the Hub";
  }
  if (e.status() == 404 && e.code() == "RepoNotFound")
    return "no repository " + repo + " on the Hub (a private one needs HF_TOKEN)";
  if (e.status() == 404 && e.code() == "RevisionNotFound") return "no revision '" + id.revision + "' in " + repo;
  if (e.status() == 404 && e.code() == "EntryNotFound")
    return "no file '" + path + "' in " + repo + " at revision '" + id.revision + "'";
  return e.what();
}

RemoteSource::RemoteSource(http::Client& client, std::string url, std::string name)
    : client_(client), url_(std::move(url)), name_(std::move(name)), next_(kFirstWindow) {
  http::Head head;
  window_ = client_.range(url_, 0, next_, &head);
  if (!head.total_known) throw InputError(url_ + ": the server does not say how long the file is");
  size_ = head.total;
  next_ *= 2;
}

void RemoteSource::read(uint64_t offset, uint64_t length, void* out) const {
  if (length > size_ || offset > size_ - length) throw InputError("truncated: a read past the end of the file");
  if (length == 0) return;
  if (offset < start_ || offset - start_ > window_.size() || length > window_.size() - (offset - start_)) {
    // A read at most 64 KiB past the window (a header read field by field, a short string skipped)
    // grows the next window; one that jumps further (past an ONNX tensor's payload) starts small
    // again, so a file of large tensors costs a small window per tensor, not their payloads.
    const uint64_t end = start_ + window_.size();
    if (offset < start_ || (offset > end && offset - end > kFirstWindow)) next_ = kJumpWindow;
    uint64_t want = std::max(length, next_);
    next_ = std::min(next_ * 2, kLargestWindow);
    window_ = client_.range(url_, offset, want);
    start_ = offset;
    if (window_.size() < length) throw InputError("truncated: the server sent less than the file holds");
  }
  std::memcpy(out, window_.data() + (offset - start_), length);
}

bool RemoteFolder::holds(const std::string& name) const {
  try {
    beside(path_, name);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool RemoteFolder::list(std::map<std::string, uint64_t>* sizes) const {
  if (!list_) return false;
  const std::string folder = path_.substr(0, path_.rfind('/') + 1);  // "" at the repo's top
  for (const RepoFile& f : list_()) {
    if (f.path.compare(0, folder.size(), folder) == 0) (*sizes)[f.path.substr(folder.size())] = f.size;
  }
  return true;
}

std::unique_ptr<ByteSource> RemoteFolder::open(const std::string& name, const char*) const {
  std::string path = beside(path_, name);
  if (first_ && path == path_) return std::move(first_);
  size_t slash = shown_.rfind('/');
  return std::make_unique<RemoteSource>(client_, url_of_(path), shown_.substr(0, slash + 1) + name);
}

namespace {

// Where a remote input is: how a path of it becomes a URL, the file's own path, how it is shown.
struct Place {
  std::function<std::string(const std::string&)> url_of;
  std::string path, shown;
  std::function<const std::vector<RepoFile>&()> list;  // the repo's files; null for a URL
};

// An http(s) URL of one file: its folder is the URL up to the last '/', without a query.
Place url_place(const std::string& input) {
  std::string url = input.substr(0, input.find_first_of("?#"));
  size_t host = url.find("://") + 3;
  size_t slash = url.rfind('/');
  if (slash == std::string::npos || slash < host || slash + 1 == url.size())
    throw InputError("'" + input + "' names no file (a URL of a .safetensors, index, .gguf or .onnx file)");
  std::string folder = url.substr(0, slash + 1), name = url.substr(slash + 1);
  Place p;
  p.path = name;
  p.shown = input;
  p.url_of = [folder, input, name](const std::string& path) {
    return path == name ? input : folder + escaped_path(path);  // the file itself as given
  };
  return p;
}

// Opens the file at `place`: its format by its name, else by its first bytes, from a first window
// that the reader then reads on (the file is not asked for twice).
Model open_remote(http::Client& client, const Place& place, const LoadOptions& options) {
  RemoteFolder folder(client, place.url_of, place.path, place.shown, place.list);
  const FormatRow* format = nullptr;
  for (const FormatRow& r : file_formats()) {
    if (!format && r.by_name && r.by_name(place.path)) format = &r;
  }
  if (!format) {
    auto file = std::make_unique<RemoteSource>(client, place.url_of(place.path), place.shown);
    format = &format_row(FormatKind::Onnx);
    if (file->size() >= kFormatHeadBytes) {
      char head[kFormatHeadBytes];
      file->read(0, kFormatHeadBytes, head);
      format = &format_of_bytes(head, file->size());
    }
    folder.keep_first(std::move(file));
  }
  size_t slash = place.path.rfind('/');
  return format->open_in(folder, place.path.substr(slash + 1), place.shown, options);
}

// The file `name` beside the remote file, whole, shown as the remote file is; nothing when it is
// not there: when the repo's list is at hand, only a listed file is asked for; else a 404 is none.
std::optional<std::pair<std::string, std::string>> fetch_beside(http::Client& client, const Place& place,
                                                                const std::vector<RepoFile>* listed, const char* name) {
  const std::string path = beside(place.path, name);
  if (listed && std::none_of(listed->begin(), listed->end(), [&](const RepoFile& r) { return r.path == path; }))
    return std::nullopt;
  try {
    std::string text = client.whole(place.url_of(path), kMostConfig);
    return std::make_pair(std::move(text), place.shown.substr(0, place.shown.rfind('/') + 1) + name);
  } catch (const http::HttpError& e) {
    if (e.status() != 404) throw;
  }
  return std::nullopt;
}

// The config beside the file, as a local model's is found (declared.h): config.json, else
// genai_config.json (onnxruntime-genai); and a LoRA adapter's adapter_config.json (PEFT's, MLX's)
// for a checkpoint with LoRA factors.
void fetch_configs(http::Client& client, const Place& place, const std::vector<RepoFile>* listed, Fetched& f) {
  for (const char* name : {"config.json", "genai_config.json"}) {
    if (auto found = fetch_beside(client, place, listed, name)) {
      std::tie(f.config_text, f.config_name) = std::move(*found);
      break;
    }
  }
  bool factors = std::any_of(f.model.weights.begin(), f.model.weights.end(), [](const Weight& w) {
    return w.name.find(".lora_") != std::string_view::npos;
  });
  if (!f.model.checkpoint || !factors) return;
  if (auto found = fetch_beside(client, place, listed, "adapter_config.json"))
    std::tie(f.adapter_config_text, f.adapter_config_name) = std::move(*found);
}

}  // namespace

Fetched fetch_model(const std::string& input, http::Options options, const LoadOptions& load) {
  std::optional<HubId> id = parse_hub_id(input);
  Hub hub;
  if (id) {
    hub = hub_from_environment();
    options.token = hub.token;
  } else {
    options.token.clear();  // a URL's host is not the Hub's: no token goes to it
  }
  http::Client client(options);
  Fetched f;
  std::string path = id ? id->path : "";
  try {
    Place place;
    std::optional<std::vector<RepoFile>> files;  // the repo's listing, fetched once when asked
    if (id) {
      place.list = [&]() -> const std::vector<RepoFile>& {
        if (!files) files = list_files(client, hub, *id);
        return *files;
      };
      if (path.empty()) path = choose_file(place.list(), *id);
      place.path = path;
      place.shown = hub_text(*id, path);
      place.url_of = [hub, id](const std::string& p) { return file_url(hub, *id, p); };
    } else {
      place = url_place(input);
    }
    f.model = open_remote(client, place, load);
    fetch_configs(client, place, files ? &*files : nullptr, f);
    f.read.url = place.url_of(place.path);
  } catch (const http::HttpError& e) {
    if (id) throw InputError(hub_error(e, hub, *id, path));
    throw;
  }
  f.read.commit = client.stats().commit;
  f.read.bytes = client.stats().bytes;
  f.read.requests = client.stats().requests;
  return f;
}

}  // namespace headcount::remote
