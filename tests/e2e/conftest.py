"""Fixtures that start the real sluice daemon on 127.0.0.1 with an ephemeral port.

The binary is $SLUICE_BIN (ctest sets it) or build/server/sluice. Every daemon a
test starts is stopped (SIGKILL if it must) when the test ends.
"""
import array
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SLUICE_BIN = Path(os.environ.get("SLUICE_BIN", REPO / "build" / "server" / "sluice"))
TINY_MODEL = REPO / "tests" / "fixtures" / "tiny-llama.gguf"
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA_MODEL = REPO / "models" / "gemma-3-270m-q4_k_m.gguf"



def on_gpu():
    """Whether the daemons' models run on a GPU: `make test E2E_BACKEND=cuda`, or no
    backend named on a machine with an NVIDIA device (`auto` takes it). Checks that
    hold bit for bit only on the CPU (whose matmuls sum each row the same way at any
    batch size; cuBLAS picks its algorithm by the row count) relax there."""
    backend = os.environ.get("SLUICE_E2E_BACKEND", "")
    return backend.startswith("cuda") or (not backend and Path("/dev/nvidiactl").exists())


# On a GPU, audio decoded in other chunks may differ by a few least-significant bits:
# the codec's cuBLAS convolutions sum in an order that depends on the chunk's length
# (CUDA vs CPU and streamed vs whole agree within ~4e-5 of full scale, ~1.3 LSB).
PCM_GPU_TOLERANCE_LSB = 8


def assert_same_pcm(got, want):
    """16-bit PCM bodies: byte for byte on the CPU; on a GPU the same length and every
    sample within PCM_GPU_TOLERANCE_LSB."""
    if not on_gpu():
        assert got == want
        return
    assert len(got) == len(want)
    a, b = array.array("h", got), array.array("h", want)
    worst = max((abs(x - y) for x, y in zip(a, b)), default=0)
    assert worst <= PCM_GPU_TOLERANCE_LSB, f"samples differ by up to {worst} LSB"


def require_model(path, fetch="`make test-models`"):
    """Skips the test when a real model file is missing, or fails it when the run
    requires the models (SLUICE_REQUIRE_MODELS=1: `make test` fetched them)."""
    if path.exists():
        return
    message = f"{path} is missing: {fetch} fetches it"
    if os.environ.get("SLUICE_REQUIRE_MODELS") == "1":
        pytest.fail(message + " (required: SLUICE_REQUIRE_MODELS=1)")
    pytest.skip(message)


LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


class Daemon:
    """One running `sluice serve`; its output is collected line by line."""

    def __init__(self, args, env=None):
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        # `make test E2E_BACKEND=cuda` (or cpu): the backend every daemon's models run on.
        backend = os.environ.get("SLUICE_E2E_BACKEND", "")
        if backend:
            full_env["SLUICE_BACKEND"] = backend
        # A GPU daemon's automatic KV budget is 90% of the device (vLLM's
        # gpu_memory_utilization): a module's second daemon would find nothing left.
        # 1 GiB each; a test's own --kv-cache-bytes flag still wins.
        if on_gpu():
            full_env["SLUICE_KV_CACHE_BYTES"] = str(1 << 30)
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [str(SLUICE_BIN), "serve", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
        )
        self.lines = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.port = None

    def _read(self):
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    @property
    def log(self):
        with self._lock:
            return "\n".join(self.lines)

    def count_log(self, pattern):
        return len(re.findall(pattern, self.log))

    def wait_for_log_count(self, pattern, count, timeout=20.0):
        """Waits until `pattern` occurs at least `count` times; returns how many times.
        Counting, not searching: on a shared daemon an earlier line already matches."""
        deadline = time.monotonic() + timeout
        while True:
            seen = self.count_log(pattern)
            if seen >= count:
                return seen
            if self.proc.poll() is not None or time.monotonic() >= deadline:
                raise AssertionError(f"/{pattern}/ seen {seen} of {count} times in:\n{self.log}")
            time.sleep(0.02)

    def wait_for_log(self, pattern, timeout=20.0):
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = regex.search(self.log)
            if match:
                return match
            if self.proc.poll() is not None:
                self._reader.join(timeout=2)
                match = regex.search(self.log)
                if match:
                    return match
                raise AssertionError(f"daemon exited ({self.proc.returncode}):\n{self.log}")
            time.sleep(0.02)
        raise AssertionError(f"timed out waiting for /{pattern}/ in:\n{self.log}")

    def wait_listening(self):
        self.port = int(self.wait_for_log(LISTENING.pattern).group(1))
        return self

    def wait_ready(self):
        self.wait_for_log(r"ready: \d+ model")
        return self

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def signal(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)

    def wait_exit(self, timeout=20.0):
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=2)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_module_daemon(*args):
    """A daemon on 127.0.0.1 with `args`, ready: for module-scoped fixtures (the caller kills it)."""
    daemon = Daemon(["--host", "127.0.0.1", "--port", "0", *args])
    try:
        daemon.wait_listening()
        daemon.wait_for_log(r"ready: \d+ model", timeout=60)
    except BaseException:
        daemon.kill()
        raise
    return daemon


@pytest.fixture(scope="module")
def tiny():
    """The tiny fixture model served by one daemon for the whole test module."""
    daemon = start_module_daemon("--model", f"tiny={TINY_MODEL}")
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def smol():
    """The default model (SmolLM2-135M) served by one daemon for the whole test module."""
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_module_daemon("--model", str(DEFAULT_MODEL))
    yield daemon
    daemon.kill()


@pytest.fixture
def start_daemon():
    """start_daemon(*args, env=None, model=TINY_MODEL, ready=True) -> Daemon."""
    started = []

    def start(*args, env=None, model=TINY_MODEL, ready=True):
        if not SLUICE_BIN.exists():
            pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
        base = ["--host", "127.0.0.1", "--port", "0"]
        if model is not None:
            base += ["--model", f"tiny={model}" if model == TINY_MODEL else str(model)]
        daemon = Daemon(base + list(args), env=env)
        started.append(daemon)
        daemon.wait_listening()
        if ready:
            daemon.wait_ready()
        return daemon

    yield start
    for daemon in started:
        daemon.kill()


@pytest.fixture
def daemon(start_daemon):
    return start_daemon()
