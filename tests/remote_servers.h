// remote_servers.h: the web servers the remote-reading tests read from, each a child process for
// the test's scope: Debian's nginx serving a folder on 127.0.0.1 (Range, HEAD, ETag as a real
// host sends them), and tests/remote/fault_server.py, whose paths misbehave one way each. A server
// that cannot start fails the test: nothing here skips.
#pragma once

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"

namespace testutil {

// A TCP port on 127.0.0.1 that nothing listens on now.
inline int free_port() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t n = sizeof a;
  if (s < 0 || bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
    if (s >= 0) close(s);
    throw std::runtime_error("no free port on 127.0.0.1");
  }
  int port = ntohs(a.sin_port);
  close(s);
  return port;
}

inline bool accepts(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = s >= 0 && connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (s >= 0) close(s);
  return ok;
}

// A child process, killed (and its group) when the scope ends.
class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    if (pid_ < 0) throw std::runtime_error("cannot fork " + argv[0]);
  }
  ~Child() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

// Waits up to 10 s for `ready`; throws `what` when it never is.
template <typename Ready>
void wait_for(Ready ready, const std::string& what) {
  for (int i = 0; i < 200; ++i) {
    if (ready()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw std::runtime_error(what);
}

// nginx serving `root` on 127.0.0.1 (a free port): url("/a/b") is http://127.0.0.1:PORT/a/b.
class Nginx {
 public:
  // `log`: every request's URI is kept, for requests().
  explicit Nginx(const std::filesystem::path& root, bool log = false) : port_(free_port()) {
    std::filesystem::create_directories(dir_.path / "tmp");
    std::ofstream conf(dir_.file("nginx.conf"));
    std::string d = dir_.path.string();
    conf << "worker_processes 1;\ndaemon off;\nmaster_process on;\npid " << d << "/nginx.pid;\n"
         << "error_log " << d << "/error.log;\n" << (geteuid() == 0 ? "user root;\n" : "")
         << "events { worker_connections 64; }\n"
         << "http {\n  log_format uris '$request_uri';\n  access_log "
         << (log ? d + "/access.log uris" : std::string("off")) << ";\n  client_body_temp_path " << d << "/tmp/body;\n  proxy_temp_path " << d
         << "/tmp/proxy;\n  fastcgi_temp_path " << d << "/tmp/fastcgi;\n  uwsgi_temp_path " << d
         << "/tmp/uwsgi;\n  scgi_temp_path " << d << "/tmp/scgi;\n"
         << "  default_type application/octet-stream;\n  types { application/json json; }\n"
         << "  server {\n    listen 127.0.0.1:" << port_ << ";\n    root " << root.string() << ";\n  }\n}\n";
    conf.close();
    const char* bin = access("/usr/sbin/nginx", X_OK) == 0 ? "/usr/sbin/nginx" : "/usr/bin/nginx";
    child_ = std::make_unique<Child>(std::vector<std::string>{bin, "-p", d, "-c", dir_.file("nginx.conf")});
    wait_for([&] { return accepts(port_); }, "nginx did not start on 127.0.0.1 (is Debian's nginx installed?)");
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  // The URIs asked for so far, in order (with `log`). nginx writes a request's line after its
  // response is sent, so a client can be done before the line is: the log is read until two reads
  // 50 ms apart agree (at most 2 s).
  std::vector<std::string> requests() const {
    auto read = [&] {
      std::vector<std::string> out;
      std::ifstream in(dir_.file("access.log"));
      for (std::string line; std::getline(in, line);) out.push_back(line);
      return out;
    };
    std::vector<std::string> last = read();
    for (int i = 0; i < 40; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::vector<std::string> now = read();
      if (now == last) break;
      last = std::move(now);
    }
    return last;
  }

 private:
  TempDir dir_;
  int port_;
  std::unique_ptr<Child> child_;
};

// tests/remote/fault_server.py: url("/stall") and the rest on 127.0.0.1, other_host() on 127.0.0.2.
class FaultServer {
 public:
  FaultServer() {
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"/usr/bin/python3", HEADCOUNT_REMOTE_DIR "/fault_server.py", dir_.path.string()});
    wait_for([&] { return std::filesystem::exists(dir_.path / "ports"); }, "the fault server did not start");
    std::ifstream in(dir_.file("ports"));
    in >> port_ >> other_;
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

 private:
  TempDir dir_;
  int port_ = 0, other_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace testutil
