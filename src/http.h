// http.h: the one HTTP client of remote inputs (internal), over libcurl: a byte range of a file,
// or a small file whole, with the rules a model's host needs.
//
// - Redirects are followed (the Hub sends large files to a CDN on another host), at most 5, over
//   http and https only; the token goes as "Authorization: Bearer" to the first URL's host only,
//   never to the host a redirect names (libcurl's bearer authentication, which keeps credentials
//   to the original host).
// - A connection that cannot be made within the connect timeout, or a transfer that stalls (less
//   than one byte a second for the stall timeout) ends with an error; neither is retried.
// - 429, 5xx and a dropped or truncated connection are tried again, a bounded number of times,
//   waiting longer each time (a Retry-After up to the longest wait is honoured).
// - Every byte received counts against one budget per client (one model): a server that ignores
//   Range and sends the whole file, or a length that points at gigabytes, stops at the budget, and
//   a response to a range request that is longer than the range is refused as soon as its headers
//   say so. Nothing is written to disk.
// Errors are HttpError (an InputError): the message names the URL, never the token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headcount/error.h"

namespace headcount::http {

struct Options {
  std::string token;                 // "" sends no Authorization
  long connect_timeout_ms = 10000;   // to open a connection
  long stall_timeout_s = 15;         // a transfer below 1 byte/s this long ends
  int retries = 3;                   // extra tries after a 429, a 5xx or a dropped connection
  long backoff_ms = 500;             // the wait before the first retry, doubled before each next
  long longest_wait_ms = 4000;       // no wait (backoff or Retry-After) is longer
  uint64_t budget = uint64_t{64} << 20;  // bytes one client may receive, over all its requests
};

// What a client fetched.
struct Stats {
  uint64_t bytes = 0;     // body bytes received, retries included
  uint64_t requests = 0;  // requests sent, retries and redirects each counted
  std::string commit;     // the last X-Repo-Commit a success carried (the Hub's revision commit)
};

// An HTTP failure. `status` is the last response's code (0 when there was none); `code` is the
// Hub's X-Error-Code header ("RepoNotFound", "RevisionNotFound", "EntryNotFound", "GatedRepo"),
// when it sent one.
class HttpError : public InputError {
 public:
  HttpError(const std::string& what, long status, std::string code)
      : InputError(what), status_(status), code_(std::move(code)) {}
  long status() const { return status_; }
  const std::string& code() const { return code_; }

 private:
  long status_;
  std::string code_;
};

// What a response said besides its body.
struct Head {
  uint64_t total = 0;      // the whole file's size (Content-Range, or Content-Length of a 200)
  bool total_known = false;
  std::string etag;        // as sent, quotes and all
  std::string commit;      // the Hub's X-Repo-Commit: the revision's commit
  std::string final_url;   // after redirects
  std::string next;        // a Link header's rel="next" (the Hub's next page of a list), as sent
};

class Client {
 public:
  explicit Client(Options options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // `length` bytes of `url` from `offset`: exactly those, or fewer when the file ends first (then
  // up to its end). length 0 asks for nothing and sends nothing.
  std::string range(const std::string& url, uint64_t offset, uint64_t length, Head* head = nullptr);
  // A whole file of at most `most` bytes (a config, an index, the model API's answers): longer is
  // an error, found from its headers where they say so.
  std::string whole(const std::string& url, uint64_t most, Head* head = nullptr);

  const Stats& stats() const { return stats_; }
  const Options& options() const { return options_; }

 private:
  std::string fetch(const std::string& url, uint64_t offset, uint64_t length, Head* head, bool whole);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  Options options_;
  Stats stats_;
};

}  // namespace headcount::http
