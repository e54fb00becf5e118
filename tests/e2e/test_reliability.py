"""loadtest/reliability.py, short, against the real daemon and the tiny model.

The script starts its own daemon (it needs the process for RSS and SIGTERM), on
127.0.0.1 with an ephemeral port, like the fixtures of conftest.py.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SLUICE_BIN, TINY_MODEL

SCRIPT = REPO / "loadtest" / "reliability.py"


def run_script(tmp_path, *args, timeout=90):
    if not SLUICE_BIN.exists():
        pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--sluice", str(SLUICE_BIN), "--model", str(TINY_MODEL),
         "--prompt-words", "4", "--json", str(out), *args],
        capture_output=True, text=True, timeout=timeout)
    figures = json.loads(out.read_text()) if out.exists() else {}
    return proc, figures


# Under `make test-sanitize` ASan keeps freed memory in quarantine (256 MiB by default)
# before reusing it, so RSS climbs by up to that much without any leak.
RSS_GROWTH_LIMIT_MIB = 64 + (256 if "ASAN_OPTIONS" in os.environ else 0)


# The SIGTERM phase needs every stream still running when the last one gets its first
# token: 160 tokens each (the tiny model's context is 256) keep the first stream busy
# for as many engine steps, where 24 let it finish first on a loaded machine.
def test_short_soak_storm_and_sigterm_pass(tmp_path):
    proc, report = run_script(tmp_path, "--streams", "4", "--duration", "12", "--max-tokens", "16",
                              "--storm", "12", "--long-max-tokens", "160", "--sigterm-max-tokens", "160",
                              "--grace-s", "20", "--max-rss-growth-mib", str(RSS_GROWTH_LIMIT_MIB))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    figures = report["figures"]
    assert figures["soak"]["completed"] > 0 and figures["soak"]["errors"] == 0
    assert len(figures["soak"]["rss_mib"]) >= 5
    assert figures["storm"]["aborts_counted"] == 12
    assert figures["storm"]["kv_cache_usage_after"] == 0
    assert figures["sigterm"]["exit_status"] == 0
    assert figures["sigterm"]["finished"] == 4 and figures["sigterm"]["drained"]
    assert "result: ok" in proc.stdout


def test_a_wrong_figure_fails_the_run(tmp_path):
    # Storm streams of one token have finished ("length") before the client drops
    # them, so the daemon counts no abort for those disconnects: the check must fail
    proc, report = run_script(tmp_path, "--streams", "2", "--duration", "2", "--max-tokens", "4",
                              "--storm", "3", "--long-max-tokens", "1", "--settle-s", "2",
                              "--sigterm-max-tokens", "8", "--grace-s", "20")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["figures"]["storm"]["aborts_counted"] == 0
    assert "FAILED storm: 0 aborts counted for 3 disconnects" in proc.stdout
