#!/usr/bin/env python3
"""Remote reading: bytes fetched, requests and time for models served as the Hugging Face Hub
serves them, by Debian's nginx on 127.0.0.1 (HF_ENDPOINT points headcount at it).

    /usr/bin/python3 bench/remote_bench.py [--headcount build/headcount] [--repeat 3] [--keep]

Made here, in a temp folder, as sparse files (their data is never written, nor read):
  - org/llama-2-7b: LLaMA-2-7B's safetensors in float16, two shards and their index (13.5 GB),
    and its config.json;
  - org/gguf-150k: a 7B-shaped GGUF in Q4_K whose metadata holds a 150,000-token vocabulary;
  - org/onnx-500m: an ONNX model with 500 MB of embedded float32 weights (run_bench.py's
    MatMul+Add chain: 125 weights of 1024 x 1024, each followed by its bias), under onnx/;
  - org/tiny-00 .. org/tiny-49: 50 repos of samples/llama_tiny.safetensors and its config,
    audited in one run with -j 8.
Each row: the file's size, the bytes headcount fetched and their share, its requests (the
report's `remote` object) and the best wall time of --repeat runs, and whether the report's
`parameters` equal those of the local audit of the same files (`--no-content`). nginx answers
at once, so the times are headcount's own plus loopback; over the Internet each request adds a
round trip. Python 3 standard library and nginx; the ONNX model is written with python3-onnx and
numpy, as run_bench.py writes its models.
"""
import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# LLaMA-2-7B (config.json of meta-llama/Llama-2-7b-hf): 32 layers, width 4096, 32 heads,
# feed-forward 11008, vocabulary 32000, untied head.
LAYERS, WIDTH, FF, VOCAB = 32, 4096, 11008, 32000
LLAMA_CONFIG = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": WIDTH,
                "intermediate_size": FF, "num_attention_heads": 32, "num_key_value_heads": 32,
                "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "tie_word_embeddings": False,
                "rms_norm_eps": 1e-5, "torch_dtype": "float16"}


def llama_tensors():
    """(name, shape) in Hugging Face's names, as the checkpoint stores them."""
    out = [("model.embed_tokens.weight", [VOCAB, WIDTH])]
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        out += [(p + "self_attn.q_proj.weight", [WIDTH, WIDTH]), (p + "self_attn.k_proj.weight", [WIDTH, WIDTH]),
                (p + "self_attn.v_proj.weight", [WIDTH, WIDTH]), (p + "self_attn.o_proj.weight", [WIDTH, WIDTH]),
                (p + "mlp.gate_proj.weight", [FF, WIDTH]), (p + "mlp.up_proj.weight", [FF, WIDTH]),
                (p + "mlp.down_proj.weight", [WIDTH, FF]), (p + "input_layernorm.weight", [WIDTH]),
                (p + "post_attention_layernorm.weight", [WIDTH])]
    return out + [("model.norm.weight", [WIDTH]), ("lm_head.weight", [VOCAB, WIDTH])]


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def sparse_safetensors(path, tensors):
    """A safetensors file of float16 tensors whose data is a hole: header written, size set."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, shape in tensors:
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + 2 * count(shape)]}
        offset += 2 * count(shape)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        f.truncate(8 + len(h) + offset)
    return offset


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def sparse_gguf(path, vocab):
    """GGUF v3, llama architecture, 7B shapes in Q4_K (144 bytes per 256 weights), `vocab` tokens
    in its metadata (tokens, scores, types), the tensor data a hole."""
    STRING, ARRAY, U32, F32, I32 = 8, 9, 4, 6, 5
    kvs = [("general.architecture", STRING, "llama"), ("llama.block_count", U32, LAYERS),
           ("llama.embedding_length", U32, WIDTH), ("llama.feed_forward_length", U32, FF),
           ("llama.attention.head_count", U32, 32), ("llama.attention.head_count_kv", U32, 32)]
    head = b""
    for key, t, v in kvs:
        head += gguf_string(key) + struct.pack("<I", t) + (gguf_string(v) if t == STRING else struct.pack("<I", v))
    tokens = [("tokenizer.ggml.tokens", STRING, ["tok%06d" % i for i in range(vocab)]),
              ("tokenizer.ggml.scores", F32, [float(-i) for i in range(vocab)]),
              ("tokenizer.ggml.token_type", I32, [1] * vocab)]
    for key, t, items in tokens:
        head += gguf_string(key) + struct.pack("<IIQ", ARRAY, t, len(items))
        if t == STRING:
            head += b"".join(gguf_string(s) for s in items)
        else:
            head += struct.pack("<%d%s" % (len(items), "f" if t == F32 else "i"), *items)
    names = [("token_embd.weight", [WIDTH, VOCAB])]
    for i in range(LAYERS):
        p = "blk.%d." % i
        names += [(p + "attn_q.weight", [WIDTH, WIDTH]), (p + "attn_k.weight", [WIDTH, WIDTH]),
                  (p + "attn_v.weight", [WIDTH, WIDTH]), (p + "attn_output.weight", [WIDTH, WIDTH]),
                  (p + "ffn_gate.weight", [WIDTH, FF]), (p + "ffn_up.weight", [WIDTH, FF]),
                  (p + "ffn_down.weight", [FF, WIDTH])]
    names += [("output.weight", [WIDTH, VOCAB])]
    infos, offset = b"", 0
    for name, ne in names:
        infos += gguf_string(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        infos += struct.pack("<IQ", 12, offset)  # Q4_K
        offset += count(ne) // 256 * 144
        offset = (offset + 31) // 32 * 32
    data = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kvs) + len(tokens)) + head + infos
    data += b"\0" * (-len(data) % 32)
    with open(path, "wb") as f:
        f.write(data)
        f.truncate(len(data) + offset)
    return len(data) + offset


class Hub:
    def __init__(self, root):
        self.www = os.path.join(root, "www")
        self.trees = {}

    def path(self, repo, name):
        p = os.path.join(self.www, repo, "resolve", "main", name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def list(self, repo, name):
        size = os.path.getsize(self.path(repo, name))
        self.trees.setdefault(repo, []).append({"type": "file", "path": name, "size": size})
        tree = os.path.join(self.www, "api", "models", repo, "tree", "main")
        os.makedirs(os.path.dirname(tree), exist_ok=True)
        with open(tree, "w") as f:
            json.dump(self.trees[repo], f)


def start_nginx(root, www):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.makedirs(os.path.join(root, "tmp"), exist_ok=True)
    conf = os.path.join(root, "nginx.conf")
    with open(conf, "w") as f:
        f.write("worker_processes 2; daemon off; pid %s/nginx.pid; error_log %s/error.log;%s\n"
                "events { worker_connections 256; }\n"
                "http { access_log off; client_body_temp_path %s/tmp/b; proxy_temp_path %s/tmp/p;\n"
                " fastcgi_temp_path %s/tmp/f; uwsgi_temp_path %s/tmp/u; scgi_temp_path %s/tmp/s;\n"
                " default_type application/octet-stream; server { listen 127.0.0.1:%d; root %s; } }\n"
                % (root, root, " user root;" if os.geteuid() == 0 else "", root, root, root, root, root, port, www))
    nginx = "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else "nginx"
    # A session of its own: its workers are killed with it (killpg), and hold no pipe of ours after.
    proc = subprocess.Popen([nginx, "-p", root, "-c", conf], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc, port
        time.sleep(0.05)
    os.killpg(proc.pid, 9)
    sys.exit("error: nginx did not start (install Debian's nginx-light)")


def run(cmd, env, repeat):
    best, out = None, None
    for _ in range(repeat):
        t = time.monotonic()
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        ms = (time.monotonic() - t) * 1000
        if p.returncode != 0:
            sys.exit("error: %s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[:300]))
        best, out = (ms, p.stdout) if best is None or ms < best else (best, out)
    return best, out


def reports(text):
    """The models of a json report, or of every line of a jsonl one."""
    text = text.strip()
    if text.startswith("{\n") or "\n" not in text:
        return json.loads(text)["models"]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--headcount", default=os.path.join(REPO_ROOT, "build", "headcount"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args()
    hc = os.path.abspath(args.headcount)
    root = tempfile.mkdtemp(prefix="headcount-remote-bench-")
    proc = None
    try:
        hub = Hub(root)
        tensors = llama_tensors()
        half = len(tensors) * 3 // 4  # two shards, the first the larger, as the Hub's files are
        shards = [("model-00001-of-00002.safetensors", tensors[:half]), ("model-00002-of-00002.safetensors", tensors[half:])]
        weight_map, total = {}, 0
        for name, part in shards:
            total += sparse_safetensors(hub.path("org/llama-2-7b", name), part)
            weight_map.update({t: name for t, _ in part})
            hub.list("org/llama-2-7b", name)
        for name, body in (("model.safetensors.index.json", {"metadata": {"total_size": total}, "weight_map": weight_map}),
                           ("config.json", LLAMA_CONFIG)):
            with open(hub.path("org/llama-2-7b", name), "w") as f:
                json.dump(body, f)
            hub.list("org/llama-2-7b", name)
        sparse_gguf(hub.path("org/gguf-150k", "llama-7b-Q4_K.gguf"), 150000)
        hub.list("org/gguf-150k", "llama-7b-Q4_K.gguf")
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from run_bench import build_weights_model, save_model  # python3-onnx, numpy
        save_model(build_weights_model(500 * 1024 * 1024), hub.path("org/onnx-500m", "onnx/model.onnx"))
        hub.list("org/onnx-500m", "onnx/model.onnx")
        samples = os.path.join(REPO_ROOT, "samples")
        tiny = ["org/tiny-%02d" % i for i in range(50)]
        for repo in tiny:
            for src, name in (("llama_tiny.safetensors", "model.safetensors"), ("llama_tiny.config.json", "config.json")):
                shutil.copy(os.path.join(samples, src), hub.path(repo, name))
                hub.list(repo, name)
        proc, port = start_nginx(root, hub.www)
        env = dict(os.environ, HF_ENDPOINT="http://127.0.0.1:%d" % port)
        env.pop("HF_TOKEN", None)

        def folder(repo):
            return os.path.join(hub.www, repo, "resolve", "main")

        cases = [("LLaMA-2-7B safetensors, 2 shards + index", ["hf://org/llama-2-7b"],
                  [folder("org/llama-2-7b")], None),
                 ("7B GGUF, 150k-token vocabulary", ["hf://org/gguf-150k/llama-7b-Q4_K.gguf"],
                  [os.path.join(folder("org/gguf-150k"), "llama-7b-Q4_K.gguf")], None),
                 ("ONNX, 500 MB of embedded weights", ["hf://org/onnx-500m"],
                  [os.path.join(folder("org/onnx-500m"), "onnx", "model.onnx")], None),
                 ("50 repos of llama_tiny, -j 8", ["-j", "8"] + ["hf://" + r for r in tiny],
                  [os.path.join(folder(r), "model.safetensors") for r in tiny], None)]
        print("remote reading (nginx on 127.0.0.1), best of %d runs" % args.repeat)
        print()
        print("| model | size | fetched | share | requests | time | figures |")
        print("|---|---:|---:|---:|---:|---:|---|")
        for label, inputs, local, _ in cases:
            fmt = "jsonl" if len(local) > 1 else "json"
            ms, out = run([hc, "audit", "--format", fmt] + inputs, env, args.repeat)
            remote = reports(out)
            _, lout = run([hc, "audit", "--format", fmt, "--no-content", "-j", "8"] + local, env, 1)
            here = reports(lout)
            same = [r["parameters"] for r in remote] == [r["parameters"] for r in here]
            size = 0  # the model's files, its config aside
            for path in local:
                base = path if os.path.isdir(path) else os.path.dirname(path)
                names = os.listdir(base) if os.path.isdir(path) else [os.path.basename(path)]
                size += sum(os.path.getsize(os.path.join(base, f)) for f in names if f != "config.json")
            fetched = sum(r["remote"]["bytes"] for r in remote)
            requests = sum(r["remote"]["requests"] for r in remote)
            print("| %s | %s | %s | %.4f%% | %d | %.0f ms | %s |" % (
                label, "{:,}".format(size), "{:,}".format(fetched), 100.0 * fetched / size, requests, ms,
                "equal to the local audit's" if same else "DIFFER"))
    finally:
        if proc:
            os.killpg(proc.pid, 9)
            proc.wait()
        if args.keep:
            print("kept " + root, file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
