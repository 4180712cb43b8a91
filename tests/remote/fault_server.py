#!/usr/bin/env python3
"""A scripted HTTP server for the remote-reading tests: each path is one way a server misbehaves.

    fault_server.py DIR

Listens on 127.0.0.1 and on 127.0.0.2 (another host, for redirects), each on a free port, writes
"PORT1 PORT2\n" to DIR/ports once both listen, and serves until killed:

  /ignore-range/N      200 with N bytes (byte i is i % 251), whatever Range asks
  /stall               206 headers of the range asked (of a 100-byte file), its first byte, then
                       nothing for 60 s
  /huge-header.safetensors  ranges of a 10^12-byte file whose header length says 90,000,000
  /truncate            206 headers promising 100 bytes, 50 bytes, then the connection closes
  /busy-then-ok/KEY    429 (Retry-After: 0) the first time KEY is asked, then 206 of the range
                       (with the Hub's X-Repo-Commit header, as /landing)
  /redirect            302 to http://127.0.0.2:PORT2/landing
  /landing             206 of the range (the file of /ignore-range/1000)
  /other-range         206 of bytes 0-9 of 1000, whatever range was asked for
  /seen                "first=yes|no landing=yes|no": whether Authorization reached each
  /status/CODE?x=NAME  CODE with X-Error-Code: NAME
  /endless             200, chunked, without end
  /claims/N            206 of a file of N bytes (as Content-Range says) that repeats an ONNX
                       opset_import record without end
  /endless-metadata/COUNT.gguf  ranges of a 10^12-byte GGUF of COUNT metadata entries, 36 bytes each
  /api/models/org/REPO/tree/main   a file list in pages (Link: rel="next"): REPO paged (two
                       pages), loop (the next page is itself), endless (a new page each time),
                       elsewhere (the next page on 127.0.0.2), many (100,001 files)

Python 3, standard library only.
"""
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SEEN = {"first": "no", "landing": "no"}
ASKED = set()
PORTS = [0, 0]


def data(n):
    return bytes(i % 251 for i in range(n))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def byte_range(self, size):
        m = re.match(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        if not m:
            return 0, size - 1
        first, last = int(m.group(1)), min(int(m.group(2)), size - 1)
        return first, last

    def send_range(self, body):
        first, last = self.byte_range(len(body))
        part = body[first:last + 1]
        self.send_response(206)
        self.send_header("X-Repo-Commit", "0123456789abcdef0123456789abcdef01234567")
        self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, len(body)))
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part)

    def send_list(self, path):
        """A repo's file list in pages, as the Hub's model API sends a long one (Link, rel="next")."""
        repo = path.split("/")[4]
        m = re.search(r"cursor=(\d+)", path)
        cursor = int(m.group(1)) if m else 0
        here = "http://127.0.0.1:%d/api/models/org/%s/tree/main?recursive=true" % (PORTS[0], repo)
        files, link = [], None
        if repo == "paged":  # two pages: model.safetensors is on the second
            files = [{"type": "file", "path": "a-Q4.gguf" if cursor == 0 else "model.safetensors", "size": 100}]
            link = here + "&cursor=1" if cursor == 0 else None
        elif repo == "loop":  # the next page is this one
            link = here
        elif repo == "endless":  # a new page each time
            link = here + "&cursor=%d" % (cursor + 1)
        elif repo == "elsewhere":  # the next page on another host
            link = "http://127.0.0.2:%d/api/models/org/elsewhere/tree/main?cursor=1" % PORTS[1]
        elif repo == "many":  # 100,001 files on one page
            files = [{"type": "file", "path": "f%d" % i, "size": 1} for i in range(100001)]
        body = json.dumps(files).encode()
        self.send_response(200)
        if link:
            self.send_header("Link", '<%s>; rel="next"' % link)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path
        if path.startswith("/ignore-range/"):
            size = int(path.rsplit("/", 1)[1])
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            block = data(251 * 256)  # the pattern repeats every 251 bytes: whole blocks of it
            try:
                sent = 0
                while sent < size:
                    part = block[:min(len(block), size - sent)]
                    self.wfile.write(part)
                    sent += len(part)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/stall":
            first, last = self.byte_range(100)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/100" % (first, last))
            self.send_header("Content-Length", str(last - first + 1))
            self.end_headers()
            self.wfile.write(data(100)[first:first + 1])
            self.wfile.flush()
            time.sleep(60)
        elif path == "/huge-header.safetensors":
            # A file of 10^12 bytes whose safetensors header length says 90,000,000: its first 8
            # bytes, then '{' and spaces, made as they are sent.
            size = 10 ** 12
            first, last = self.byte_range(size)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
            self.send_header("Content-Length", str(last - first + 1))
            self.end_headers()
            head = (90000000).to_bytes(8, "little") + b"{"
            try:
                at = first
                while at <= last:
                    n = min(65536, last - at + 1)
                    chunk = bytearray(b" " * n)
                    for i in range(max(at, 0), min(at + n, len(head))):
                        chunk[i - at] = head[i]
                    self.wfile.write(bytes(chunk))
                    at += n
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/truncate":
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-99/100")
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(data(50))
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif path.startswith("/busy-then-ok/"):
            if path not in ASKED:
                ASKED.add(path)
                self.send_response(429)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_range(data(1000))
        elif path == "/redirect":
            SEEN["first"] = "yes" if self.headers.get("Authorization") else "no"
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.2:%d/landing" % PORTS[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/landing":
            SEEN["landing"] = "yes" if self.headers.get("Authorization") else "no"
            self.send_range(data(1000))
        elif path == "/other-range":
            # 206 of bytes 0-9 whatever range was asked for.
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-9/1000")
            self.send_header("Content-Length", "10")
            self.end_headers()
            self.wfile.write(data(10))
        elif path == "/seen":
            body = ("first=%s landing=%s" % (SEEN["first"], SEEN["landing"])).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path.startswith("/status/"):
            m = re.match(r"/status/(\d+)(?:\?x=(\w+))?", path)
            self.send_response(int(m.group(1)))
            if m.group(2):
                self.send_header("X-Error-Code", m.group(2))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.startswith("/claims/"):
            # A file of the size the path gives (any number, up to 2^64-1 and past it), whose bytes
            # repeat an ONNX ModelProto's opset_import record (field 8, 4 bytes: version 13, twice)
            # without end: a model whose header never ends.
            total = path.split("/")[2]
            record = b"\x42\x04\x10\x0d\x10\x0d"
            first, last = self.byte_range(int(total))
            last = min(last, first + (1 << 24) - 1)
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%s" % (first, last, total))
            self.send_header("Content-Length", str(last - first + 1))
            self.end_headers()
            body = (record * ((last - first) // len(record) + 2))[first % len(record):]
            try:
                self.wfile.write(body[:last - first + 1])
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif re.match(r"/endless-metadata/\d+\.gguf$", path):
            # A GGUF v3 file of 10^12 bytes: no tensors, COUNT metadata entries (the path's last
            # part, COUNT.gguf), each a distinct 8-character key (k0000000, k0000001, ...) holding
            # an 8-character string, 36 bytes each: metadata larger than a budget. Made as sent.
            count = int(path.rsplit("/", 1)[1].split(".")[0])
            size, head = 10 ** 12, b"GGUF" + struct.pack("<IQQ", 3, 0, count)
            first, last = self.byte_range(size)
            last = min(last, first + (1 << 24) - 1)

            def record(i):
                return struct.pack("<Q", 8) + b"k%07d" % (i % 10 ** 7) + struct.pack("<IQ", 8, 8) + b"xxxxxxxx"

            body = head[first:last + 1] if first < len(head) else b""
            at = max(first, len(head)) - len(head)  # where the records' bytes start, among them
            need = last + 1 - max(first, len(head))
            if need > 0:
                i = at // 36
                body += b"".join(record(j) for j in range(i, i + need // 36 + 2))[at % 36:at % 36 + need]
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (first, last, size))
            self.send_header("Content-Length", str(last - first + 1))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path.startswith("/api/models/org/"):
            self.send_list(path)
        elif path == "/endless":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                while True:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a connection the test closes or the script drops is what the test is about


def main():
    folder = sys.argv[1]
    servers = [Server(("127.0.0.1", 0), Handler), Server(("127.0.0.2", 0), Handler)]
    for i, s in enumerate(servers):
        PORTS[i] = s.server_address[1]
        threading.Thread(target=s.serve_forever, daemon=True).start()
    tmp = os.path.join(folder, "ports.tmp")
    with open(tmp, "w") as f:
        f.write("%d %d\n" % (PORTS[0], PORTS[1]))
    os.rename(tmp, os.path.join(folder, "ports"))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
