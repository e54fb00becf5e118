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
