"""Timeouts, graceful shutdown and start-up failures of the real daemon."""
import signal
import socket
import subprocess
import time

import pytest

from conftest import SLUICE_BIN, TINY_MODEL
from http_util import get_json, read_until_closed, request, wait_requests_in_flight


def test_slowloris_header_is_cut_off(start_daemon):
    # A header timeout of 1 s against up to 8 s of dribbling: a deadline restarted by
    # each line would never fire, and the default of 10 s would outlast the dribble;
    # 8 s leaves the 1 s deadline room on a loaded machine.
    daemon = start_daemon("--header-timeout-s", "1")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        closed = False
        dribble_until = time.monotonic() + 8
        i = 0
        # Dribble one header line every 0.2 s until the server hangs up.
        while not closed and time.monotonic() < dribble_until:
            i += 1
            try:
                sock.sendall(b"X-Drip-%d: y\r\n" % i)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            sock.settimeout(0.2)
            try:
                if sock.recv(4096) == b"":
                    closed = True
            except socket.timeout:
                pass
            except ConnectionResetError:
                closed = True
        assert closed, f"server kept a slowloris connection open through {i} header lines"
    # Everyone else is still served.
    assert request(daemon, "GET", "/health")[0] == 200


def test_silent_connection_hits_idle_timeout(start_daemon):
    # The idle timeout (1 s) closes it; the header timeout (60 s) and the 30 s we wait
    # are both far beyond it.
    daemon = start_daemon("--idle-timeout-s", "1", "--header-timeout-s", "60")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as sock:
        assert sock.recv(1) == b""  # closed by the server (a timeout here raises)


def test_graceful_shutdown_finishes_the_request_in_flight(start_daemon):
    daemon = start_daemon("--shutdown-grace-s", "10")
    body = b'{"in": "flight"}'
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    try:
        # The request is in flight: headers and half the body are in.
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body)
                     + body[:5])
        wait_requests_in_flight(daemon, 1)
        daemon.signal(signal.SIGTERM)
        daemon.wait_for_log(r"shutting down")

        # No new connections once draining began.
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", daemon.port), timeout=2).close()

        sock.sendall(body[5:])
        reply = read_until_closed(sock, timeout=30)
    finally:
        sock.close()
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), reply[:300]
    assert b"Connection: close" in head
    assert b'"id":"tiny"' in payload
    assert daemon.wait_exit(timeout=30) == 0
    assert "all connections drained" in daemon.log


def test_shutdown_closes_idle_keep_alive_connections_at_once(start_daemon):
    # Nothing in flight: the drain ends as soon as the idle connection is closed, not
    # when the (here 600 s) grace period is over.
    daemon = start_daemon("--shutdown-grace-s", "600", "--idle-timeout-s", "600")
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    daemon.signal(signal.SIGINT)
    assert daemon.wait_exit(timeout=60) == 0
    assert "all connections drained" in daemon.log
    assert "grace period over" not in daemon.log
    sock.close()


def test_grace_period_bounds_a_stuck_request(start_daemon):
    # The body never completes and its own timeout (600 s) is far off: only the 1 s
    # grace period can end it.
    daemon = start_daemon("--shutdown-grace-s", "1", "--body-timeout-s", "600")
    sock = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
    wait_requests_in_flight(daemon, 1)
    daemon.signal(signal.SIGTERM)
    assert daemon.wait_exit(timeout=60) == 0
    assert "grace period over" in daemon.log
    sock.close()


def test_sigterm_while_loading_stops_loading_and_exits(start_daemon):
    # Many models to load: SIGTERM after the first must not wait for the rest.
    count = 400
    models = []
    for i in range(count):
        models += ["--model", f"m{i}={TINY_MODEL}"]
    daemon = start_daemon(*models, "--compute-threads", "1", "--kv-cache-bytes", "1048576", model=None,
                          ready=False)
    daemon.wait_for_log(r"model m0: engine started", timeout=60)
    daemon.signal(signal.SIGTERM)
    assert daemon.wait_exit(timeout=60) == 0
    log = daemon.log
    assert "stopped loading models" in log, log[-2000:]
    assert "ready:" not in log
    assert log.count("engine started") < count


def run_sluice(*args, timeout=20):
    return subprocess.run([str(SLUICE_BIN), *args], capture_output=True, text=True, timeout=timeout)


def test_bad_config_names_the_key():
    result = run_sluice("serve", "--port", "abc", "--model", str(TINY_MODEL))
    assert result.returncode != 0
    assert "port" in (result.stdout + result.stderr)


def test_the_global_backend_reaches_every_model(start_daemon):
    daemon = start_daemon(env={"SLUICE_BACKEND": "cpu"})
    status, _, models = get_json(daemon, "/v1/models")
    assert status == 200
    assert [m["meta"]["backend"] for m in models["data"]] == ["cpu"]
    # A device this machine lacks (CI has no GPU; no machine has eight): refused at load, named.
    refused = start_daemon("--backend", "cuda:7", ready=False)
    assert refused.wait_exit(timeout=20) == 1
    assert "cuda:7" in refused.log


def test_missing_model_file_fails_at_load(start_daemon, tmp_path):
    missing = tmp_path / "nope.gguf"
    daemon = start_daemon(model=missing, ready=False)
    assert daemon.wait_exit(timeout=20) == 1
    assert "nope.gguf" in daemon.log


def test_corrupt_model_file_fails_at_load(start_daemon, tmp_path):
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(TINY_MODEL.read_bytes()[:1000])
    daemon = start_daemon(model=corrupt, ready=False)
    assert daemon.wait_exit(timeout=20) == 1
    assert "corrupt.gguf" in daemon.log and "offset" in daemon.log


def test_help_lists_every_subcommand_and_option():
    result = run_sluice("--help")
    assert result.returncode == 0
    text = result.stdout
    for word in ["serve", "inspect", "--config", "--model", "--host", "--port", "--api-keys",
                 "SLUICE_PORT"]:
        assert word in text, word


def test_inspect_prints_metadata():
    result = run_sluice("inspect", str(TINY_MODEL))
    assert result.returncode == 0, result.stderr
    assert "general.architecture" in result.stdout
    assert "servable: tiny-llama" in result.stdout
