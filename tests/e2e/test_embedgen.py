"""loadtest/embedgen.py: against a fake /v1/embeddings on 127.0.0.1 (standard library
server, answers known), and against the real daemon serving the tiny fixture model."""
import http.server
import importlib.util
import json
import subprocess
import sys
import threading

import pytest

from conftest import REPO, TINY_MODEL, start_module_daemon

EMBEDGEN = REPO / "loadtest" / "embedgen.py"
TOKENS_PER_INPUT = 7  # what the fake server counts for every input


def load_module():
    spec = importlib.util.spec_from_file_location("embedgen", EMBEDGEN)
    module = importlib.util.module_from_spec(spec)
    sys.modules["embedgen"] = module
    spec.loader.exec_module(module)
    return module


embedgen = load_module()


class FakeEmbeddings(http.server.BaseHTTPRequestHandler):
    """One 2-float vector per input and 7 prompt tokens each. A model named "refuse"
    gets a 400; "short" gets one vector fewer than asked (a wrong answer)."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    bodies = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeEmbeddings.bodies.append((self.path, dict(self.headers), body))
        if body["model"] == "refuse":
            status, answer = 400, {"error": {"message": "no", "type": "invalid_request_error",
                                             "param": "model", "code": None}}
        else:
            count = len(body["input"]) - (1 if body["model"] == "short" else 0)
            answer = {"object": "list", "model": body["model"],
                      "data": [{"object": "embedding", "index": i, "embedding": [0.6, 0.8]}
                               for i in range(count)],
                      "usage": {"prompt_tokens": TOKENS_PER_INPUT * len(body["input"]),
                                "total_tokens": TOKENS_PER_INPUT * len(body["input"])}}
            status = 200
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    FakeEmbeddings.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_json(tmp_path, *args, timeout=60):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(EMBEDGEN), *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=timeout)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_embedgen_sends_each_batch_size_and_counts_inputs_and_tokens(fake, tmp_path):
    proc, report = run_json(tmp_path, "--url", fake, "--model", "emb", "--batch", "1,4,16",
                            "--inputs", "10", "--words", "5", "--concurrency", "2", "--api-key", "k3y")
    assert proc.returncode == 0, proc.stderr
    assert [p["batch"] for p in report["phases"]] == [1, 4, 16]
    # 10 inputs a phase: 10 requests of 1; 4 + 4 + 2; one of 10.
    assert [p["requests"] for p in report["phases"]] == [10, 3, 1]
    sent = [len(b["input"]) for _, _, b in FakeEmbeddings.bodies]
    assert sent[:10] == [1] * 10 and sorted(sent[10:13]) == [2, 4, 4] and sent[13:] == [10]
    for p in report["phases"]:
        assert p["ok"] == p["requests"] and p["failed"] == 0
        assert p["inputs"] == 10 and p["tokens"] == 10 * TOKENS_PER_INPUT
        assert p["inputs_per_s"] == pytest.approx(10 / p["elapsed_s"], rel=1e-3)
        assert p["tokens_per_s"] == pytest.approx(p["inputs_per_s"] * TOKENS_PER_INPUT, rel=1e-3)
        assert 0 < p["latency_ms"]["p50"] <= p["latency_ms"]["p99"]
    # What went out: the embeddings route, base64 by default, the key, and every input
    # of a phase its own text.
    path, headers, body = FakeEmbeddings.bodies[0]
    assert path == "/v1/embeddings" and headers["Authorization"] == "Bearer k3y"
    assert body["model"] == "emb" and body["encoding_format"] == "base64"
    texts = [t for _, _, b in FakeEmbeddings.bodies[:10] for t in b["input"]]
    assert len(set(texts)) == 10
    # The machine and the table.
    assert report["machine"]["cores"] >= 1 and report["machine"]["cpu"]
    assert "inputs/s" in proc.stdout and "tokens/s" in proc.stdout and "machine" in proc.stdout


def test_embedgen_counts_refused_and_short_answers_as_failed(fake, tmp_path):
    proc, report = run_json(tmp_path, "--url", fake, "--model", "refuse", "--batch", "2", "--inputs", "4")
    assert proc.returncode == 1
    phase = report["phases"][0]
    assert phase["ok"] == 0 and phase["failed"] == 2 and phase["status_counts"] == {"400": 2}
    assert phase["inputs"] == 0 and phase["tokens_per_s"] == 0
    proc, report = run_json(tmp_path, "--url", fake, "--model", "short", "--batch", "2", "--inputs", "4",
                            "--encoding-format", "float")
    assert proc.returncode == 1
    assert report["phases"][0]["ok"] == 0 and report["phases"][0]["status_counts"] == {"200": 2}
    assert FakeEmbeddings.bodies[-1][2]["encoding_format"] == "float"


def test_embedgen_refuses_a_remote_target_and_bad_batches(tmp_path):
    proc, report = run_json(tmp_path, "--url", "http://192.0.2.1:8080", "--model", "emb")
    assert proc.returncode == 2
    assert "loopback" in proc.stderr and report is None
    proc, report = run_json(tmp_path, "--model", "emb", "--batch", "1,0")
    assert proc.returncode == 2 and report is None


@pytest.fixture(scope="module")
def tiny_daemon():
    daemon = start_module_daemon("--model", f"tiny={TINY_MODEL}", "--compute-threads", "1")
    yield daemon
    daemon.kill()


def test_embedgen_against_the_daemon_serving_the_tiny_model(tiny_daemon, tmp_path):
    proc, report = run_json(tmp_path, "--url", tiny_daemon.url, "--model", "tiny", "--batch", "1,4",
                            "--inputs", "8", "--words", "6", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for phase in report["phases"]:
        assert phase["ok"] == phase["requests"] and phase["inputs"] == 8, phase
        # The server's usage: every input has its dozen or so tokens.
        assert phase["tokens"] > 8 * 6
    # Both phases embed the same texts, so the server counts the same tokens.
    assert report["phases"][0]["tokens"] == report["phases"][1]["tokens"]
