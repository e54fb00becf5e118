"""A unit test whose real model is missing says so, and fails when the run requires
the models (SLUICE_REQUIRE_MODELS=1, as `make test` sets after fetching them)."""
import os
import subprocess

import pytest

from conftest import SLUICE_BIN

UNIT_TESTS = SLUICE_BIN.parent.parent / "tests" / "sluice_unit_tests"
PROBE = "prerequisites: probe with a model file that does not exist"


def run_probe(require):
    if not UNIT_TESTS.exists():
        pytest.fail(f"{UNIT_TESTS} is missing: build first (make build)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_REQUIRE_")}
    if require:
        env["SLUICE_REQUIRE_MODELS"] = "1"
    return subprocess.run([str(UNIT_TESTS), f"--test-case={PROBE}", "--no-skip"], env=env,
                          capture_output=True, text=True, timeout=60)


def test_a_missing_model_is_a_reported_skip():
    result = run_probe(require=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SKIPPED prerequisite probe: /nonexistent/sluice-probe.gguf is missing" in result.stdout
    assert "1 test(s) skipped for a missing prerequisite" in result.stdout


def test_a_missing_model_fails_when_the_models_are_required():
    result = run_probe(require=True)
    assert result.returncode != 0, result.stdout
    assert "required: SLUICE_REQUIRE_MODELS=1" in result.stdout
