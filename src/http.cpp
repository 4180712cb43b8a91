// http.cpp: the HTTP client of remote inputs, over libcurl (http.h).
#include "http.h"

#include <curl/curl.h>
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>

#include "headcount/version.h"

namespace headcount::http {

namespace {

// libcurl, loaded when a remote input is first read rather than linked: a local audit does not pay
// for loading it and the libraries it brings (TLS, HTTP/2, SSH, LDAP ...), about 4 ms and 3 MiB
// of every run of the tool. The same functions, through pointers.
struct Curl {
  CURLcode (*global_init)(long);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_perform)(CURL*);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  const char* (*easy_strerror)(CURLcode);
};

template <typename F>
bool bind(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const Curl& curl() {
  static const Curl* api = []() -> const Curl* {  // once, whatever the threads
    void* lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    static Curl c;
    if (!lib || !bind(lib, "curl_global_init", c.global_init) || !bind(lib, "curl_easy_init", c.easy_init) ||
        !bind(lib, "curl_easy_cleanup", c.easy_cleanup) || !bind(lib, "curl_easy_reset", c.easy_reset) ||
        !bind(lib, "curl_easy_setopt", c.easy_setopt) || !bind(lib, "curl_easy_perform", c.easy_perform) ||
        !bind(lib, "curl_easy_getinfo", c.easy_getinfo) || !bind(lib, "curl_easy_strerror", c.easy_strerror))
      return nullptr;
    c.global_init(CURL_GLOBAL_DEFAULT);
    return &c;
  }();
  if (!api) throw InputError("reading a remote model needs libcurl (libcurl.so.4, Debian's libcurl4), which cannot be loaded");
  return *api;
}

std::string mib(uint64_t bytes) {
  if (bytes % (uint64_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

// A decimal header value: digits only, at most 19 of them (so it fits); else unknown.
bool parse_count(const std::string& s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// One request's state, as its callbacks see it.
struct Transfer {
  uint64_t cap = 0;             // body bytes this request may keep
  uint64_t budget_left = 0;     // the client's budget before this request
  uint64_t received = 0;        // body bytes received (every response of it)
  std::string body;
  bool over_cap = false, over_budget = false;
  long status = 0;              // of the response being read
  std::string code, etag, commit, retry_after, next;
  uint64_t length = 0, first = 0, total = 0;
  bool has_length = false, has_range = false, has_total = false;
};

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

// "bytes FIRST-LAST/TOTAL" (TOTAL may be "*").
void parse_content_range(const std::string& v, Transfer& t) {
  if (v.rfind("bytes ", 0) != 0) return;
  size_t dash = v.find('-', 6), slash = v.find('/', 6);
  if (dash == std::string::npos || slash == std::string::npos || dash > slash) return;
  t.has_range = parse_count(v.substr(6, dash - 6), &t.first);
  t.has_total = parse_count(v.substr(slash + 1), &t.total);
}

// The target of a Link header's rel="next" (RFC 8288: `<URL>; rel="next"`, links separated by
// commas), as the Hub pages its file lists; "" when there is none, or it is longer than 4 KiB.
std::string next_link(const std::string& value) {
  size_t at = 0;
  while (at < value.size()) {
    size_t open = value.find('<', at), close = value.find('>', open == std::string::npos ? at : open);
    if (open == std::string::npos || close == std::string::npos) return "";
    size_t end = value.find(',', close);
    std::string params = value.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
    if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
      return close - open - 1 <= 4096 ? value.substr(open + 1, close - open - 1) : "";
    if (end == std::string::npos) return "";
    at = end + 1;
  }
  return "";
}

size_t on_header(char* data, size_t size, size_t n, void* p) {
  auto& t = *static_cast<Transfer*>(p);
  std::string line = trim(std::string(data, size * n));
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect): forget the last one's
    Transfer fresh;
    fresh.cap = t.cap;
    fresh.budget_left = t.budget_left;
    fresh.received = t.received;
    t = std::move(fresh);
    size_t sp = line.find(' ');
    uint64_t status = 0;
    if (sp != std::string::npos && parse_count(line.substr(sp + 1, 3), &status)) t.status = static_cast<long>(status);
    return size * n;
  }
  size_t colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon), value = trim(line.substr(colon + 1));
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (name == "content-length") t.has_length = parse_count(value, &t.length);
  else if (name == "content-range") parse_content_range(value, t);
  else if (name == "x-error-code") t.code = value.substr(0, 64);
  else if (name == "etag") t.etag = value.substr(0, 256);
  else if (name == "x-repo-commit") t.commit = value.substr(0, 64);
  else if (name == "retry-after") t.retry_after = value.substr(0, 16);
  else if (name == "link") t.next = next_link(value);
  // A success longer than what may be kept is refused before its body: a server that ignores
  // Range does not get to send the file.
  if (t.status / 100 == 2 && t.has_length && t.length > t.cap) {
    t.over_cap = true;
    return 0;
  }
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* p) {
  auto& t = *static_cast<Transfer*>(p);
  size_t k = size * n;
  if (k > t.budget_left - t.received) {
    t.over_budget = true;
    return 0;
  }
  t.received += k;
  if (t.status / 100 != 2) return k;  // an error's body: counted, not kept
  if (k > t.cap - t.body.size()) {
    t.over_cap = true;
    return 0;
  }
  t.body.append(data, k);
  return k;
}

bool retryable_status(long s) { return s == 429 || s == 500 || s == 502 || s == 503 || s == 504; }
bool retryable_error(CURLcode rc) {
  return rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING;
}

std::string status_words(long s) {
  switch (s) {
    case 401: return "401 (unauthorized)";
    case 403: return "403 (forbidden)";
    case 404: return "404 (not found)";
    case 416: return "416 (range not satisfiable)";
    case 429: return "429 (too many requests)";
    default: return std::to_string(s);
  }
}

}  // namespace

struct Client::Impl {
  CURL* curl = nullptr;
};

Client::Client(Options options) : impl_(std::make_unique<Impl>()), options_(std::move(options)) {
  impl_->curl = curl().easy_init();
  if (!impl_->curl) throw InputError("cannot start an HTTP client");
}

Client::~Client() {
  if (impl_->curl) curl().easy_cleanup(impl_->curl);
}

namespace {

// One request made by `c` with the client's options: the transfer's state, and libcurl's result.
CURLcode perform(CURL* c, const Options& o, const std::string& url, const std::string& range, Transfer& t) {
  const Curl& api = curl();
  api.easy_reset(c);
  static const std::string agent = std::string("headcount/") + kVersion;
  api.easy_setopt(c, CURLOPT_URL, url.c_str());
  api.easy_setopt(c, CURLOPT_USERAGENT, agent.c_str());
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  api.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
  api.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  api.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o.connect_timeout_ms);
  api.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  api.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o.stall_timeout_s);
  api.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  api.easy_setopt(c, CURLOPT_HEADERDATA, &t);
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (!range.empty()) api.easy_setopt(c, CURLOPT_RANGE, range.c_str());
  if (!o.token.empty()) {  // bearer authentication: libcurl sends it to this URL's host only
    api.easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    api.easy_setopt(c, CURLOPT_XOAUTH2_BEARER, o.token.c_str());
  }
  return api.easy_perform(c);
}

long wait_ms(const Options& o, int attempt, const std::string& retry_after) {
  long ms = o.backoff_ms;
  for (int i = 0; i < attempt && ms < o.longest_wait_ms; ++i) ms *= 2;
  uint64_t seconds = 0;
  if (parse_count(retry_after, &seconds) && seconds < 3600) ms = std::max<long>(ms, static_cast<long>(seconds) * 1000);
  return std::min(ms, o.longest_wait_ms);
}

}  // namespace

std::string Client::range(const std::string& url, uint64_t offset, uint64_t length, Head* head) {
  return fetch(url, offset, length, head, false);
}

std::string Client::fetch(const std::string& url, uint64_t offset, uint64_t length, Head* head, bool whole) {
  if (length == 0) return {};
  uint64_t last = offset + length - 1;
  if (last < offset) last = UINT64_MAX - 1;  // a range to the end of anything
  std::string spec = std::to_string(offset) + "-" + std::to_string(last);
  for (int attempt = 0;; ++attempt) {
    Transfer t;
    t.cap = length;
    t.budget_left = options_.budget - stats_.bytes;
    CURLcode rc = perform(impl_->curl, options_, url, spec, t);
    long redirects = 0;
    curl().easy_getinfo(impl_->curl, CURLINFO_REDIRECT_COUNT, &redirects);
    stats_.requests += 1 + static_cast<uint64_t>(std::max(0L, redirects));
    stats_.bytes += t.received;
    if (t.over_budget)
      throw HttpError(url + ": the fetch budget of " + mib(options_.budget) + " is spent", t.status, t.code);
    if (t.over_cap && whole) throw HttpError(url + ": is larger than " + mib(length - 1), t.status, t.code);
    if (t.over_cap)
      throw HttpError(url + ": the server ignores Range requests (it sends more than the " + std::to_string(length) +
                          " bytes asked for)",
                      t.status, t.code);
    if (rc == CURLE_OK && (t.status == 206 || t.status == 200)) {
      if (t.status == 206 && (!t.has_range || t.first != offset))
        throw HttpError(url + ": the server sent another range than the one asked for", t.status, t.code);
      uint64_t total = t.status == 200 ? t.body.size() : t.total;
      bool known = t.status == 200 || t.has_total;
      std::string out = t.status == 200 ? (offset < t.body.size() ? t.body.substr(offset, length) : std::string())
                                        : std::move(t.body);
      uint64_t expect = known ? (offset < total ? std::min(length, total - offset) : 0) : length;
      if (out.size() != expect)
        throw HttpError(url + ": the server sent " + std::to_string(out.size()) + " of the " + std::to_string(expect) +
                            " bytes asked for",
                        t.status, t.code);
      if (!t.commit.empty()) stats_.commit = t.commit;
      if (head) {
        head->total = total;
        head->total_known = known;
        head->etag = t.etag;
        head->commit = t.commit;
        head->next = t.next;
        char* eff = nullptr;
        curl().easy_getinfo(impl_->curl, CURLINFO_EFFECTIVE_URL, &eff);
        head->final_url = eff ? eff : url;
      }
      return out;
    }
    bool again = rc == CURLE_OK ? retryable_status(t.status) : retryable_error(rc);
    if (again && attempt < options_.retries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms(options_, attempt, t.retry_after)));
      continue;
    }
    if (rc == CURLE_OK) throw HttpError(url + ": HTTP " + status_words(t.status), t.status, t.code);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      long connect = 0;
      curl().easy_getinfo(impl_->curl, CURLINFO_CONNECT_TIME_T, &connect);
      throw HttpError(url + (connect > 0 || t.status ? ": the transfer stalled (no data for " +
                                                           std::to_string(options_.stall_timeout_s) + " s)"
                                                     : ": no connection within " +
                                                           std::to_string(options_.connect_timeout_ms / 1000) + " s"),
                      t.status, t.code);
    }
    if (retryable_error(rc)) throw HttpError(url + ": the connection dropped before the response ended", t.status, t.code);
    if (rc == CURLE_COULDNT_CONNECT) throw HttpError(url + ": cannot connect", t.status, t.code);
    if (rc == CURLE_COULDNT_RESOLVE_HOST) throw HttpError(url + ": cannot resolve the host", t.status, t.code);
    throw HttpError(url + ": " + curl().easy_strerror(rc), t.status, t.code);
  }
}

std::string Client::whole(const std::string& url, uint64_t most, Head* head) {
  // A whole file is the range from 0 of at most `most` bytes that must end the file.
  Head h;
  std::string body = fetch(url, 0, most + 1, &h, true);
  if (body.size() > most || (h.total_known && h.total > most))
    throw HttpError(url + ": is larger than " + mib(most), 200, "");
  if (head) *head = h;
  return body;
}

}  // namespace headcount::http
