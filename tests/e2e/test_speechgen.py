"""loadtest/speechgen.py: against a fake /v1/audio/speech on 127.0.0.1 (standard
library server, timings known), and against the real daemon serving the tiny
Qwen3-TTS fixture."""
import http.server
import importlib.util
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, start_module_daemon
from http_util import get_json

SPEECHGEN = REPO / "loadtest" / "speechgen.py"
TTS_FIXTURE = REPO / "tests" / "fixtures" / "qwen3_tts" / "custom_voice_small"
FRAME_SECONDS = 0.08  # one codec frame at 12.5 Hz


def load_module():
    spec = importlib.util.spec_from_file_location("speechgen", SPEECHGEN)
    module = importlib.util.module_from_spec(spec)
    sys.modules["speechgen"] = module
    spec.loader.exec_module(module)
    return module


speechgen = load_module()


class FakeSpeech(http.server.BaseHTTPRequestHandler):
    """Streams FRAMES frames of silence as chunked pcm, FIRST_S to the first, GAP_S apart.
    Input "refuse" gets a 400, as the real route answers a bad request."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    FIRST_S, GAP_S, FRAMES = 0.05, 0.01, 5
    bodies = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeSpeech.bodies.append((self.path, dict(self.headers), body))
        if body["input"] == "refuse":
            error = json.dumps({"error": {"message": "bad voice", "type": "invalid_request_error",
                                          "param": "voice", "code": None}}).encode()
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(error)))
            self.end_headers()
            self.wfile.write(error)
            return
        rate = body.get("sample_rate", 24000)
        self.send_response(200)
        self.send_header("Content-Type", "audio/pcm")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        time.sleep(self.FIRST_S)
        frame = bytes(2 * int(rate * FRAME_SECONDS))
        for i in range(self.FRAMES):
            if i:
                time.sleep(self.GAP_S)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    FakeSpeech.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeSpeech)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_json(tmp_path, *args, timeout=60):
    out = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, str(SPEECHGEN), *args, "--json", str(out)],
                          capture_output=True, text=True, timeout=timeout)
    return proc, (json.loads(out.read_text()) if out.exists() else None)


def test_speechgen_measures_ttfa_rtf_and_audio_from_pcm_bytes(fake, tmp_path):
    proc, report = run_json(tmp_path, "--url", fake, "--model", "tts", "--concurrency", "2",
                            "--requests", "4", "--voice", "vivian", "--max-new-tokens", "5",
                            "--seed", "7", "--api-key", "k3y")
    assert proc.returncode == 0, proc.stderr
    assert report["ok"] == 4 and report["failed"] == 0
    assert report["status_counts"] == {"200": 4}
    # 5 frames of 80 ms each per request, read from the bytes.
    assert report["audio_s"] == pytest.approx(4 * 5 * FRAME_SECONDS)
    # First audio after FIRST_S; the whole stream takes FIRST_S + 4 GAP_S = 0.09 s for 0.4 s.
    assert FakeSpeech.FIRST_S * 1000 <= report["ttfa_ms"]["p50"] < 1000
    assert report["ttfa_ms"]["p50"] <= report["ttfa_ms"]["p99"]
    assert 0 < report["rtf"]["min"] <= report["rtf"]["p50"] < 0.4 / 0.09
    assert report["audio_s_per_s"] == pytest.approx(report["audio_s"] / report["elapsed_s"], rel=1e-4)
    # What went out: the speech route, pcm streamed as audio, the options given.
    assert len(FakeSpeech.bodies) == 4
    path, headers, body = FakeSpeech.bodies[0]
    assert path == "/v1/audio/speech"
    assert headers["Authorization"] == "Bearer k3y"
    assert body["response_format"] == "pcm" and body["stream_format"] == "audio"
    assert body["model"] == "tts" and body["voice"] == "vivian"
    assert body["max_new_tokens"] == 5 and body["seed"] == 7
    # Without --input the built-in sentences take turns.
    assert len({b["input"] for _, _, b in FakeSpeech.bodies}) > 1
    # The table says the same.
    assert "TTFA ms" in proc.stdout and "stream RTF" in proc.stdout and "4 ok, 0 failed" in proc.stdout


def test_speechgen_reads_audio_length_at_the_sample_rate_asked(fake, tmp_path):
    proc, report = run_json(tmp_path, "--url", fake, "--model", "tts", "--requests", "1",
                            "--sample-rate", "16000", "--input", "hello")
    assert proc.returncode == 0, proc.stderr
    assert FakeSpeech.bodies[0][2]["sample_rate"] == 16000
    assert FakeSpeech.bodies[0][2]["input"] == "hello"
    assert report["sample_rate"] == 16000
    assert report["audio_s"] == pytest.approx(5 * FRAME_SECONDS)


def test_speechgen_counts_refused_requests_as_failed(fake, tmp_path):
    proc, report = run_json(tmp_path, "--url", fake, "--model", "tts", "--requests", "2",
                            "--input", "refuse")
    assert proc.returncode == 1  # nothing succeeded
    assert report["ok"] == 0 and report["failed"] == 2
    assert report["status_counts"] == {"400": 2}
    assert report["audio_s"] == 0  # the error JSON is no audio


def test_speechgen_refuses_a_remote_target(tmp_path):
    proc, report = run_json(tmp_path, "--url", "http://192.0.2.1:8080", "--model", "tts")
    assert proc.returncode == 2
    assert "loopback" in proc.stderr and report is None


@pytest.fixture(scope="module")
def tts_daemon():
    if not (TTS_FIXTURE / "config.json").exists():
        pytest.skip(f"{TTS_FIXTURE} is missing (tests/fixtures/qwen3_tts/make_fixtures.py makes it)")
    daemon = start_module_daemon("--model", str(TTS_FIXTURE))
    yield daemon
    daemon.kill()


def test_speechgen_against_the_daemon_serving_a_tts_fixture(tts_daemon, tmp_path):
    status, _, models = get_json(tts_daemon, "/v1/models")
    assert status == 200
    model = models["data"][0]["id"]
    proc, report = run_json(tmp_path, "--url", tts_daemon.url, "--model", model, "--concurrency", "2",
                            "--requests", "4", "--max-new-tokens", "8", "--seed", "1", "--ignore-eos",
                            timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["ok"] == 4, report
    # Random weights sample EOS early; --ignore-eos holds every stream to its 8 frames.
    assert report["audio_s"] == pytest.approx(4 * 8 * FRAME_SECONDS)
    assert report["ttfa_ms"]["p50"] > 0 and report["ttfa_ms"]["p99"] >= report["ttfa_ms"]["p50"]
    assert report["rtf"]["min"] > 0
