// http_test.cpp: the HTTP client of remote inputs (src/http.h) against a real web server (Debian's
// nginx on 127.0.0.1) and a scripted one whose paths misbehave (tests/remote/fault_server.py).
// Every expected byte is the file's own: byte i of the test files is i % 251.
#include <catch2/catch.hpp>

#include <fstream>
#include <functional>

#include "http.h"
#include "paths.h"
#include "remote_servers.h"

using headcount::http::Client;
using headcount::http::Head;
using headcount::http::HttpError;
using headcount::http::Options;

namespace {

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i % 251);
  return s;
}

// A short client for the faults: no long waits.
Options quick() {
  Options o;
  o.connect_timeout_ms = 2000;
  o.stall_timeout_s = 1;
  o.retries = 2;
  o.backoff_ms = 10;
  o.longest_wait_ms = 50;
  return o;
}

std::string error_of(const std::function<void()>& f, long* status = nullptr, std::string* code = nullptr) {
  try {
    f();
  } catch (const HttpError& e) {
    if (status) *status = e.status();
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("http: a range of a file nginx serves, and its whole", "[http]") {
  testutil::TempDir www;
  { std::ofstream(www.file("w.bin"), std::ios::binary) << pattern(1000); }
  { std::ofstream(www.file("config.json")) << "{\"model_type\": \"llama\"}"; }
  testutil::Nginx nginx(www.path);
  Client c;
  Head head;
  // Bytes 100..149 of the file: 100 % 251 = 100 up to 149.
  CHECK(c.range(nginx.url("/w.bin"), 100, 50, &head) == pattern(1000).substr(100, 50));
  CHECK(head.total == 1000);
  CHECK(head.total_known);
  CHECK(!head.etag.empty());  // nginx sends one for a static file
  CHECK(c.stats().requests == 1);
  CHECK(c.stats().bytes == 50);
  // A range running past the end gives the 10 bytes there are (990..999).
  CHECK(c.range(nginx.url("/w.bin"), 990, 50) == pattern(1000).substr(990));
  CHECK(c.stats().bytes == 60);
  // Asking for nothing sends nothing.
  CHECK(c.range(nginx.url("/w.bin"), 5, 0).empty());
  CHECK(c.stats().requests == 2);
  CHECK(c.whole(nginx.url("/config.json"), 4096) == "{\"model_type\": \"llama\"}");
  // 23 bytes, allowed 22: the range asks for 23 and gets them, one too many.
  CHECK(error_of([&] { c.whole(nginx.url("/config.json"), 22); }) ==
        nginx.url("/config.json") + ": is larger than 22 bytes");
  long status = 0;
  CHECK(error_of([&] { c.range(nginx.url("/missing.bin"), 0, 8); }, &status) ==
        nginx.url("/missing.bin") + ": HTTP 404 (not found)");
  CHECK(status == 404);
}

TEST_CASE("http: a server that ignores Range sends nothing past its headers", "[http]") {
  testutil::FaultServer s;
  Client c(quick());
  // 10 MB offered for a range of 100 bytes: refused at the Content-Length, before the body.
  CHECK(error_of([&] { c.range(s.url("/ignore-range/10000000"), 0, 100); }) ==
        s.url("/ignore-range/10000000") + ": the server ignores Range requests (it sends more than the 100 bytes asked for)");
  CHECK(c.stats().bytes == 0);
  // A file shorter than the range: a 200 of the whole of it is the range (bytes 10..59 of 60).
  CHECK(c.range(s.url("/ignore-range/60"), 10, 100) == pattern(60).substr(10));
}

TEST_CASE("http: a range other than the one asked for is refused", "[http]") {
  testutil::FaultServer s;
  Client c(quick());
  // Bytes 100..109 asked for, bytes 0..9 sent: the same length, the wrong place.
  CHECK(error_of([&] { c.range(s.url("/other-range"), 100, 10); }) ==
        s.url("/other-range") + ": the server sent another range than the one asked for");
}

TEST_CASE("http: a stalled transfer ends with an error, not a wait", "[http]") {
  testutil::FaultServer s;
  Client c(quick());  // stall timeout 1 s; the server sends 1 byte and waits 60 s
  CHECK(error_of([&] { c.range(s.url("/stall"), 0, 100); }) == s.url("/stall") + ": the transfer stalled (no data for 1 s)");
  CHECK(c.stats().requests == 1);  // a stall is not retried
}

TEST_CASE("http: a truncated body is retried, then an error", "[http]") {
  testutil::FaultServer s;
  Client c(quick());  // retries = 2: three tries
  std::string e = error_of([&] { c.range(s.url("/truncate"), 0, 100); });
  CHECK(e == s.url("/truncate") + ": the connection dropped before the response ended");
  CHECK(c.stats().requests == 3);
  CHECK(c.stats().bytes == 150);  // 50 bytes of each try
}

TEST_CASE("http: 429 then the range: retried once", "[http]") {
  testutil::FaultServer s;
  Client c(quick());
  CHECK(c.range(s.url("/busy-then-ok/a"), 20, 30) == pattern(1000).substr(20, 30));
  CHECK(c.stats().requests == 2);
  CHECK(c.stats().commit == "0123456789abcdef0123456789abcdef01234567");  // the Hub's X-Repo-Commit
}

TEST_CASE("http: the token goes to the first host only, never where a redirect leads", "[http]") {
  testutil::FaultServer s;
  Options o = quick();
  o.token = "hf_secret_token_for_the_test";
  Client c(o);
  Head head;
  CHECK(c.range(s.url("/redirect"), 0, 16, &head) == pattern(16));
  CHECK(head.final_url.find("http://127.0.0.2:") == 0);
  CHECK(c.stats().requests == 2);  // the redirect and the landing
  Client plain(quick());
  CHECK(plain.whole(s.url("/seen"), 100) == "first=yes landing=no");
}

TEST_CASE("http: 401 and 404 keep the host's error code; the token is in no message", "[http]") {
  testutil::FaultServer s;
  Options o = quick();
  o.token = "hf_secret_token_for_the_test";
  Client c(o);
  long status = 0;
  std::string code;
  std::string e = error_of([&] { c.range(s.url("/status/401?x=GatedRepo"), 0, 8); }, &status, &code);
  CHECK(e == s.url("/status/401?x=GatedRepo") + ": HTTP 401 (unauthorized)");
  CHECK(status == 401);
  CHECK(code == "GatedRepo");
  e = error_of([&] { c.range(s.url("/status/404?x=RevisionNotFound"), 0, 8); }, &status, &code);
  CHECK(status == 404);
  CHECK(code == "RevisionNotFound");
  CHECK(e.find("hf_secret") == std::string::npos);
  // A 503 is retried (retries = 2), then said.
  CHECK(error_of([&] { c.range(s.url("/status/503"), 0, 8); }) == s.url("/status/503") + ": HTTP 503");
  CHECK(c.stats().requests == 5);
}

TEST_CASE("http: a body without end stops at the fetch budget", "[http]") {
  testutil::FaultServer s;
  Options o = quick();
  o.budget = uint64_t{1} << 20;
  Client c(o);
  CHECK(error_of([&] { c.whole(s.url("/endless"), uint64_t{100} << 20); }) ==
        s.url("/endless") + ": the fetch budget of 1 MiB is spent");
  CHECK(c.stats().bytes <= (uint64_t{1} << 20));
}

TEST_CASE("http: nothing listening: one error", "[http]") {
  Client c(quick());
  std::string url = "http://127.0.0.1:" + std::to_string(testutil::free_port()) + "/x";
  CHECK(error_of([&] { c.range(url, 0, 8); }) == url + ": cannot connect");
  CHECK(c.stats().requests == 1);
}

TEST_CASE("paths: a URL's path segment is percent-encoded whole", "[http]") {
  CHECK(headcount::percent_encoded("model-00001-of-00002.safetensors", false) == "model-00001-of-00002.safetensors");
  CHECK(headcount::percent_encoded("../x", false) == "..%2Fx");
  CHECK(headcount::percent_encoded("%2e%2e", false) == "%252e%252e");
  CHECK(headcount::percent_encoded("a b?c#d", false) == "a%20b%3Fc%23d");
}
