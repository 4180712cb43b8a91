"""The Python module takes the same remote strings as the command line: hf:// ids and URLs, read
from a Hub-shaped tree that Debian's nginx serves on 127.0.0.1 (HF_ENDPOINT points at it), each
report equal to the local audit of the same files but for where they were read."""
import json
import os
import shutil
import socket
import subprocess
import time

import pytest

import headcount

SAMPLES = os.path.join(os.environ.get("HEADCOUNT_REPO", os.path.join(os.path.dirname(__file__), "..", "..")), "samples")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def hub(tmp_path, monkeypatch):
    www = tmp_path / "www"
    for repo in ("org/a", "org/b"):
        files = {"model.safetensors": os.path.join(SAMPLES, "llama_tiny.safetensors"),
                 "config.json": os.path.join(SAMPLES, "llama_tiny.config.json")}
        tree = []
        for name, source in files.items():
            target = www / repo / "resolve" / "main" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
            tree.append({"type": "file", "path": name, "size": os.path.getsize(source)})
        listing = www / "api" / "models" / repo / "tree" / "main"
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(tree))
    port = free_port()
    (tmp_path / "tmp").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "worker_processes 1; daemon off; pid %s/nginx.pid; error_log %s/error.log;%s\n"
        "events { worker_connections 64; }\n"
        "http { access_log off; client_body_temp_path %s/tmp/b; proxy_temp_path %s/tmp/p; fastcgi_temp_path %s/tmp/f;\n"
        " uwsgi_temp_path %s/tmp/u; scgi_temp_path %s/tmp/s; default_type application/octet-stream;\n"
        " server { listen 127.0.0.1:%d; root %s; } }\n"
        % ((tmp_path,) * 2 + (" user root;" if os.geteuid() == 0 else "",) + (tmp_path,) * 5 + (port, www)))
    nginx = "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else "nginx"
    # A session of its own, so that killing its group ends its workers too.
    server = subprocess.Popen([nginx, "-p", str(tmp_path), "-c", str(conf)], start_new_session=True)
    for _ in range(200):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    else:
        os.killpg(server.pid, 9)
        pytest.fail("nginx did not start on 127.0.0.1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:%d" % port)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield "http://127.0.0.1:%d" % port
    os.killpg(server.pid, 9)
    server.wait()


def without_places(d):
    d = dict(d)
    d.pop("file", None)
    d.pop("remote", None)
    d["model"] = {k: v for k, v in d["model"].items() if k != "files"}
    if isinstance(d.get("declared"), dict):
        d["declared"] = {k: v for k, v in d["declared"].items() if k != "file"}
    return d


def test_hf_ids_and_urls_audit_as_the_local_files(hub):
    local = headcount.audit(os.path.join(SAMPLES, "llama_tiny.safetensors"), content=False,
                            model_config=os.path.join(SAMPLES, "llama_tiny.config.json"))
    remote = headcount.audit("hf://org/a")
    assert without_places(remote.to_dict()) == without_places(local.to_dict())
    assert remote.parameters.stored == 24_992  # samples/llama_tiny.counts.tsv
    assert remote.to_dict()["remote"]["url"] == hub + "/org/a/resolve/main/model.safetensors"
    by_url = headcount.audit(hub + "/org/b/resolve/main/model.safetensors")
    assert without_places(by_url.to_dict()) == without_places(local.to_dict())
    many = headcount.audit_many(["hf://org/a", "hf://org/b"], jobs=2)
    assert [r.parameters.stored for r in many] == [24_992, 24_992]


def test_a_missing_repo_raises_input_error(hub):
    with pytest.raises(headcount.InputError) as e:
        headcount.audit("hf://org/none")
    assert "HTTP 404 (not found)" in str(e.value)
