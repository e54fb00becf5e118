"""loadtest/loadgen.py against a tiny keep-alive HTTP/1.1 server on 127.0.0.1.

No daemon needed: the server is the standard library's, started inside the test.
"""
import asyncio
import http.server
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

LOADGEN = Path(__file__).resolve().parents[2] / "loadtest" / "loadgen.py"


def load_module():
    spec = importlib.util.spec_from_file_location("loadgen", LOADGEN)
    module = importlib.util.module_from_spec(spec)
    sys.modules["loadgen"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


loadgen = load_module()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless the client says otherwise
    disable_nagle_algorithm = True
    connections = 0
    lock = threading.Lock()

    def setup(self):
        super().setup()
        with Handler.lock:
            Handler.connections += 1

    def do_GET(self):
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"data: one\n\n", b"data: two\n\n", b"data: [DONE]\n\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        body = b'{"status":"ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    # A fake /v1/completions stream: TTFT_S to the first chunk, then a chunk of
    # TOKENS_PER_CHUNK tokens every GAP_S; usage and [DONE] last.
    TTFT_S, GAP_S, NUM_CHUNKS, TOKENS_PER_CHUNK = 0.05, 0.04, 4, 2
    bodies = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def send(event):
            data = b"data: " + (event if isinstance(event, bytes) else
                                json.dumps(event).encode()) + b"\n\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        if body["model"] == "broken":
            send({"error": {"message": "engine failed", "type": "server_error"}})
        else:
            time.sleep(self.TTFT_S)
            for i in range(self.NUM_CHUNKS):
                if i:
                    time.sleep(self.GAP_S)
                send({"object": "text_completion", "model": body["model"],
                      "choices": [{"index": 0, "text": f" t{i}a t{i}b", "finish_reason": None}]})
            tokens = self.NUM_CHUNKS * self.TOKENS_PER_CHUNK
            send({"object": "text_completion", "choices": [],
                  "usage": {"prompt_tokens": 5, "completion_tokens": tokens,
                            "total_tokens": tokens + 5}})
        send(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    Handler.connections = 0
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def fresh_bodies():
    Handler.bodies = []


def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, str(LOADGEN), *args],
                          capture_output=True, text=True, timeout=timeout)


def test_fixed_concurrency_report(server, tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli(f"{server}/health", "--concurrency", "4", "--requests", "200",
                   "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "latency ms" in proc.stdout and "req/s" in proc.stdout
    report = json.loads(out.read_text())
    assert report["requests"] == 200
    assert report["ok"] == 200
    assert report["status_counts"] == {"200": 200}
    assert report["errors"] == {}
    assert report["mode"] == "concurrency" and report["concurrency"] == 4
    lat = report["latency_ms"]
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert report["requests_per_s"] > 0
    assert report["bytes_received"] >= 200 * len('{"status":"ok"}')
    assert Handler.connections <= 4  # keep-alive: one connection per worker


def test_poisson_rate(server, tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli(server, "--path", "/health", "--rate", "500", "--requests", "50",
                   "--seed", "7", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    assert report["mode"] == "rate" and report["rate"] == 500
    assert report["requests"] == 50 and report["status_counts"] == {"200": 50}


def test_chunked_body_reaches_the_hook(server):
    pieces = []
    plan = loadgen.Plan(
        target=loadgen.parse_target(server + "/chunked"),
        request=loadgen.Request("GET", "/chunked", []),
        concurrency=2, num_requests=6,
        on_chunk=lambda result, data, now: pieces.append((id(result), data)))
    results, _ = asyncio.run(loadgen.run(plan))
    assert len(results) == 6
    for result in results:
        assert result.error is None and result.status == 200
        assert result.first_byte is not None and result.start <= result.first_byte <= result.end
        body = b"".join(data for rid, data in pieces if rid == id(result))
        assert body == b"data: one\n\ndata: two\n\ndata: [DONE]\n\n"


def test_nothing_listening_is_an_error_not_a_crash(tmp_path):
    with socket.socket() as s:  # a port that was free a moment ago
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "report.json"
    proc = run_cli(f"http://127.0.0.1:{port}/", "--requests", "3", "--json", str(out))
    assert proc.returncode == 1
    report = json.loads(out.read_text())
    assert report["requests"] == 3 and sum(report["errors"].values()) == 3


@pytest.mark.parametrize("url", ["http://10.1.2.3/", "http://[2001:db8::1]:8080/",
                                 "http://example.com/", "https://127.0.0.1/"])
def test_non_loopback_target_is_refused_before_sending(url, monkeypatch, capsys):
    def no_network(*args, **kwargs):
        raise AssertionError("loadgen touched the network for a refused target")
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(asyncio, "open_connection", no_network)
    assert loadgen.main([url, "--requests", "1"]) == 2
    err = capsys.readouterr().err
    assert url in err and ("loopback" in err or "http://HOST" in err)


def test_streaming_completions_report(server, tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli(server, "--openai-completions", "tiny", "--prompt", "Once upon",
                   "--max-tokens", "8", "--concurrency", "2", "--requests", "6",
                   "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    for row in ("ttft ms", "itl ms", "tok/s"):
        assert row in proc.stdout
    assert Handler.bodies[0] == {
        "model": "tiny", "prompt": "Once upon", "max_tokens": 8, "temperature": 0,
        "stream": True, "stream_options": {"include_usage": True}}
    report = json.loads(out.read_text())
    assert report["method"] == "POST" and report["target"].endswith("/v1/completions")
    stream = report["stream"]
    assert stream["complete"] == 6 and stream["errors"] == {}
    chunks, per_chunk = Handler.NUM_CHUNKS, Handler.TOKENS_PER_CHUNK
    assert stream["output_tokens"] == 6 * chunks * per_chunk
    assert stream["output_tokens_per_s"] > 0 and stream["requests_per_s"] > 0
    ttft, itl = stream["ttft_ms"], stream["itl_ms"]
    assert ttft["samples"] == 6
    # Sleeps only lower-bound the times; the upper bounds are generous for a busy CI.
    assert Handler.TTFT_S * 1000 * 0.9 <= ttft["p50"] <= ttft["p90"] <= ttft["p99"] < 2000
    # Each gap after the first chunk carries per_chunk tokens: gap / per_chunk apiece.
    assert itl["samples"] == 6 * (chunks - 1) * per_chunk
    expected = Handler.GAP_S * 1000 / per_chunk
    assert expected * 0.5 <= itl["p50"] <= itl["p90"] <= itl["p99"] < 1000
    assert itl["mean"] >= expected * 0.9


def test_distinct_prompts_and_ignore_eos(server):
    def run(seed):
        Handler.bodies = []
        proc = run_cli(server, "--openai-completions", "tiny", "--distinct-prompts", "40",
                       "--ignore-eos", "--concurrency", "2", "--requests", "4",
                       "--seed", str(seed))
        assert proc.returncode == 0, proc.stderr
        assert len(Handler.bodies) == 4
        assert all(body["ignore_eos"] is True for body in Handler.bodies)
        return sorted(body["prompt"] for body in Handler.bodies)

    first = run(1)
    assert len(set(first)) == 4  # every request its own prompt
    assert all(len(prompt.split()) >= 40 for prompt in first)
    assert run(1) == first  # the same seed, the same prompts
    assert not set(run(2)) & set(first)  # another seed shares none
    proc = run_cli(server, "--distinct-prompts", "40")
    assert proc.returncode == 2 and "--openai-completions" in proc.stderr


def test_streaming_error_event_is_counted(server, tmp_path):
    out = tmp_path / "report.json"
    proc = run_cli(server, "--openai-completions", "broken", "--requests", "3",
                   "--json", str(out))
    assert proc.returncode == 0, proc.stderr  # answered, but not complete streams
    stream = json.loads(out.read_text())["stream"]
    assert stream["complete"] == 0 and stream["errors"] == {"error event": 3}
    assert stream["ttft_ms"]["samples"] == 0 and stream["output_tokens"] == 0


def test_sse_events_split_across_reads():
    openai_stream = sys.modules["openai_stream"]
    result = loadgen.Result(start=0.0, status=200)
    events = (b'data: {"choices":[{"text":"Hi"}]}\r\n\r\n'
              b'data: {"choices":[{"text":""}]}\n\n'  # no content: not a token
              b'data: {"choices":[{"text":" there"}]}\n\n'
              b'data: {"choices":[],"usage":{"completion_tokens":5}}\n\n'
              b"data: [DONE]\n\n")
    for i in range(0, len(events), 7):  # pieces that cut events and CRLFs apart
        openai_stream.on_chunk(result, events[i:i + 7], 1.0 + i / 1000)
    state = result.extra["stream"]
    assert len(state.content_times) == 2 and state.done and state.error is None
    assert state.completion_tokens == 5
    assert openai_stream.classify(result) is None
    # 5 tokens over 2 chunks: 3 arrive with the first, 2 with the second.
    gap = state.content_times[1] - state.content_times[0]
    assert openai_stream.inter_token_latencies(state) == pytest.approx([gap / 2] * 2)
