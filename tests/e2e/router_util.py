"""vllm-router (pinned in requirements.txt) started in front of sluice replicas on
127.0.0.1, for the router tests (test_router.py, test_kv_events_router.py)."""
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from http_util import request

ROUTER_BIN = Path(sys.executable).parent / "vllm-router"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Router:
    """One running vllm-router in front of `replicas`; its output is collected."""

    def __init__(self, replicas, policy, *extra):
        if not ROUTER_BIN.exists():
            pytest.fail(f"{ROUTER_BIN} is missing: `make venv` installs vllm-router")
        self.port = free_port()
        args = [
            str(ROUTER_BIN), "--host", "127.0.0.1", "--port", str(self.port),
            "--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port()),
            "--worker-urls", *[replica.url for replica in replicas], "--policy", policy,
            # The router's load poll (power_of_two) reuses the startup interval.
            "--worker-startup-check-interval", "1", "--worker-startup-timeout-secs", "60",
            "--health-check-endpoint", "/ready", "--health-check-interval-secs", "1",
            "--health-failure-threshold", "1", "--health-check-timeout-secs", "10",
            "--log-level", "debug", *extra,
        ]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self._wait_ready(len(replicas))
        except BaseException:
            self.stop()
            raise

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(ANSI.sub("", line.rstrip("\n")))

    @property
    def log(self):
        with self._lock:
            return "\n".join(self.lines)

    def _wait_ready(self, count, timeout=60.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                status, _, body = request(self, "GET", "/readiness", timeout=5)
                if status == 200 and json.loads(body)["healthy_workers"] == count:
                    return
            except OSError:
                pass  # not listening yet
            assert self.proc.poll() is None, f"vllm-router exited:\n{self.log}"
            assert time.monotonic() < deadline, f"vllm-router not ready:\n{self.log}"
            time.sleep(0.05)

    def worker_health(self):
        status, _, body = request(self, "GET", "/workers")
        assert status == 200, body
        return {worker["url"]: worker["is_healthy"] for worker in json.loads(body)["workers"]}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
