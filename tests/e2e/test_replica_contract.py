"""What routers and gateways read from a replica: /metrics under vLLM's names, the
load and info endpoints of the SGLang/vLLM router lineage, POST /flush_cache, and
/ready as a router's or Kubernetes' readiness signal (503 while loading and from
SIGTERM on, while the requests in flight finish)."""
import json
import re
import shutil
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import TINY_MODEL, start_module_daemon
from http_util import (assert_openai_error, get_json, parse_metrics, read_until_closed, request,
                       wait_requests_in_flight)

# Every family the issue names, as the exposition spells it (a counter's family
# carries its _total, as vLLM's prometheus_client exposition does), and its type.
VLLM_FAMILIES = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:cache_config_info": "gauge",
    "vllm:prefix_cache_queries_total": "counter",
    "vllm:prefix_cache_hits_total": "counter",
    "vllm:prompt_tokens_total": "counter",
    "vllm:generation_tokens_total": "counter",
    "vllm:num_preemptions_total": "counter",
    "vllm:request_success_total": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:time_per_output_token_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
    "vllm:request_prompt_tokens": "histogram",
    "vllm:request_generation_tokens": "histogram",
}

# Series that must grow when requests run: (name, extra labels).
MOVING = [
    ("vllm:prefix_cache_queries_total", {}),
    ("vllm:prefix_cache_hits_total", {}),
    ("vllm:prompt_tokens_total", {}),
    ("vllm:generation_tokens_total", {}),
    ("vllm:request_success_total", {"finished_reason": "length"}),
    ("vllm:time_to_first_token_seconds_count", {}),
    ("vllm:inter_token_latency_seconds_count", {}),
    ("vllm:time_per_output_token_seconds_count", {}),
    ("vllm:e2e_request_latency_seconds_count", {}),
    ("vllm:request_queue_time_seconds_count", {}),
    ("vllm:request_prompt_tokens_count", {}),
    ("vllm:request_generation_tokens_count", {}),
]

LONG_PROMPT = "A shared system prompt that is long enough to fill several KV blocks. " * 2


def scrape(daemon):
    status, _, body = request(daemon, "GET", "/metrics")
    assert status == 200
    return body.decode()


def types_of(text):
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))


def value(samples, name, **labels):
    return samples.get((name, frozenset({"model_name": "tiny", **labels}.items())))


def complete(daemon, prompt, max_tokens=8, **extra):
    body = {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}
    status, _, raw = request(daemon, "POST", "/v1/completions", body=json.dumps(body),
                             headers={"Content-Type": "application/json"}, timeout=60)
    assert status == 200, raw
    return json.loads(raw)


def settle(daemon, finished_length):
    """Scrapes until `finished_length` choices show as finished by length (the engine
    publishes its totals once per step); returns the samples."""
    deadline = time.monotonic() + 60  # generous: the machine may be loaded, or running ASan
    while True:
        samples = parse_metrics(scrape(daemon))
        done = value(samples, "vllm:request_success_total", finished_reason="length") or 0
        if done >= finished_length:
            return samples
        assert time.monotonic() < deadline, f"{done} of {finished_length} finished requests in /metrics"
        time.sleep(0.05)


# ---- /metrics under vLLM's names ---------------------------------------------


@pytest.fixture(scope="module")
def replica():
    daemon = start_module_daemon("--model", f"tiny={TINY_MODEL}")
    yield daemon
    daemon.kill()


def test_every_vllm_family_is_there_with_its_type_and_sluice_twin(replica):
    text = scrape(replica)
    types = types_of(text)
    for name, kind in VLLM_FAMILIES.items():
        assert types.get(name) == kind, (name, types.get(name))
        if name != "vllm:time_per_output_token_seconds":  # an older vLLM name only
            assert types.get("sluice_" + name[len("vllm:"):]) == kind, name
    samples = parse_metrics(text)
    info = [labels for (name, labels) in samples if name == "vllm:cache_config_info"]
    assert len(info) == 1
    labels = dict(info[0])
    assert labels["model_name"] == "tiny" and labels["block_size"] == "16"
    _, _, server_info = get_json(replica, "/get_server_info")
    assert int(labels["num_gpu_blocks"]) == server_info["num_kv_blocks"] > 0
    assert samples[("vllm:cache_config_info", info[0])] == 1


def test_vllm_series_move_under_load_and_equal_sluices(replica):
    before = settle(replica, 0)
    done_before = value(before, "vllm:request_success_total", finished_reason="length")
    for _ in range(3):  # the second and third hit the prefix cache
        assert complete(replica, LONG_PROMPT)["choices"][0]["finish_reason"] == "length"
    after = settle(replica, done_before + 3)
    for name, labels in MOVING:
        assert value(after, name, **labels) > value(before, name, **labels), name
    # One source of truth: each vLLM series equals its sluice_ twin in the same scrape.
    # (vllm:time_per_output_token_seconds has none: it is the older name of
    # vllm:inter_token_latency_seconds, which has.)
    for (name, labels), number in after.items():
        if name.startswith("vllm:") and not name.startswith("vllm:time_per_output_token"):
            twin = "sluice_" + name[len("vllm:"):]
            assert after.get((twin, labels)) == number, (name, dict(labels))
    assert 0 <= value(after, "vllm:kv_cache_usage_perc") <= 1


def test_gauges_and_load_endpoints_show_requests_in_flight(replica):
    """/get_load, /load and vllm:num_requests_running rise while requests run: polled
    until each has shown it, for as long as the requests last."""
    assert get_json(replica, "/get_load")[2]["load"] >= 0
    body = {"model": "tiny", "prompt": "count", "max_tokens": 200, "temperature": 0, "ignore_eos": True}
    seen = {"get_load": 0, "load": 0, "running": 0}
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(request, replica, "POST", "/v1/completions", json.dumps(body),
                               {"Content-Type": "application/json"}, 120) for _ in range(8)]
        while not all(seen.values()) and not all(f.done() for f in futures):
            _, _, load = get_json(replica, "/get_load")
            assert set(load) >= {"load", "num_reqs", "num_running_reqs", "num_waiting_reqs"}
            assert isinstance(load["load"], int)
            assert load["load"] == load["num_running_reqs"] + load["num_waiting_reqs"]
            seen["get_load"] = max(seen["get_load"], load["load"])
            seen["load"] = max(seen["load"], get_json(replica, "/load")[2]["server_load"])
            samples = parse_metrics(scrape(replica))
            seen["running"] = max(seen["running"], value(samples, "vllm:num_requests_running") or 0)
        assert all(f.result()[0] == 200 for f in futures)
    assert all(seen.values()), seen
    # Idle again: nothing running or waiting.
    deadline = time.monotonic() + 60
    while get_json(replica, "/get_load")[2]["load"] != 0:
        assert time.monotonic() < deadline, "load never went back to 0"
        time.sleep(0.05)
    assert get_json(replica, "/load")[2] == {"server_load": 0}


def test_promtool_accepts_the_exposition_but_for_vllms_colons(replica):
    """promtool's linter flags every name with a ':' (Prometheus reserves colons for
    recording rules); vLLM's own names have them, so that, and only that, is
    expected of the vllm: families. Everything else passes as it stands."""
    complete(replica, "promtool")
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: scripts/install-deps.sh installs Debian's prometheus"
    text = scrape(replica)
    result = subprocess.run([promtool, "check", "metrics"], input=text,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode in (0, 3), result.stdout + result.stderr  # 1: a parse error
    problems = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    colon = re.compile(r"^(vllm:\S+) metric names should not contain ':'$")
    flagged = {colon.match(line).group(1) for line in problems if colon.match(line)}
    assert [line for line in problems if not colon.match(line)] == []
    assert flagged >= set(VLLM_FAMILIES)
    without_vllm = "\n".join(line for line in text.splitlines() if "vllm:" not in line) + "\n"
    result = subprocess.run([promtool, "check", "metrics"], input=without_vllm,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


def test_vllm_names_can_be_turned_off(start_daemon):
    daemon = start_daemon("--metrics-vllm-names", "false")
    complete(daemon, "hello")
    text = scrape(daemon)
    assert "vllm:" not in text
    assert types_of(text)["sluice_num_requests_running"] == "gauge"


# ---- the load and info endpoints -------------------------------------------------


def test_info_endpoints_name_the_served_model(replica):
    for path in ["/get_model_info", "/model_info"]:
        status, _, info = get_json(replica, path)
        assert status == 200
        assert info["model_path"] == "tiny" and info["tokenizer_path"] == "tiny"
        assert info["is_generation"] is True
        assert info["max_context_length"] == 256
    for path in ["/get_server_info", "/server_info"]:
        status, _, info = get_json(replica, path)
        assert status == 200
        assert info["model_id"] == "tiny" and info["model_path"] == "tiny"
        assert info["dp_size"] == 1
        assert info["max_total_tokens"] == info["num_kv_blocks"] * 16 > 0
        assert info["version"].startswith("sluice ")
        assert [m["id"] for m in info["models"]] == ["tiny"]
        assert str(TINY_MODEL) not in json.dumps(info)  # open without a key: no file paths


def test_router_endpoints_are_open_and_flush_needs_the_key(start_daemon):
    daemon = start_daemon("--api-keys", "k1")
    for path in ["/get_load", "/load", "/get_server_info", "/server_info", "/get_model_info", "/model_info"]:
        assert request(daemon, "GET", path)[0] == 200, path
    status, _, body = request(daemon, "POST", "/flush_cache")
    assert status == 401
    assert_openai_error(body, code="invalid_api_key")
    status, _, body = request(daemon, "POST", "/flush_cache", headers={"Authorization": "Bearer k1"})
    assert status == 200, body


def test_flush_cache_drops_the_prefix_cache(start_daemon):
    daemon = start_daemon()

    def cached(text):
        return text["usage"]["prompt_tokens_details"]["cached_tokens"]

    first = complete(daemon, LONG_PROMPT)
    assert cached(first) == 0
    assert cached(complete(daemon, LONG_PROMPT)) >= 16
    status, _, raw = request(daemon, "POST", "/flush_cache")
    assert status == 200, raw
    flushed = json.loads(raw)
    assert flushed["flushed_blocks"] >= 1
    assert flushed["models"] == [{"id": "tiny", "flushed_blocks": flushed["flushed_blocks"]}]
    again = complete(daemon, LONG_PROMPT)
    assert cached(again) == 0  # no prefix hit after the flush
    assert again["choices"][0]["text"] == first["choices"][0]["text"]
    assert cached(complete(daemon, LONG_PROMPT)) >= 16  # and the cache fills again
    # What the last requests cached goes; a second flush in a row finds nothing.
    status, _, raw = request(daemon, "POST", "/flush_cache")
    assert status == 200 and json.loads(raw)["flushed_blocks"] >= 1
    status, _, raw = request(daemon, "POST", "/flush_cache")
    assert status == 200 and json.loads(raw)["flushed_blocks"] == 0


# ---- readiness for routers and Kubernetes ----------------------------------------


def test_ready_only_once_every_model_is_loaded(start_daemon):
    # Many models to load (as test_lifecycle's SIGTERM-while-loading test): /ready is
    # asked while the first is in and the rest are still loading.
    count = 200
    models = []
    for i in range(count):
        models += ["--model", f"m{i}={TINY_MODEL}"]
    daemon = start_daemon(*models, "--compute-threads", "1", "--kv-cache-bytes", "1048576", model=None,
                          ready=False)
    daemon.wait_for_log(r"model m0: engine started", timeout=60)
    status, _, body = request(daemon, "GET", "/ready")
    assert status == 503, body
    assert assert_openai_error(body)["message"] == "Models are still loading"
    assert request(daemon, "GET", "/health")[0] == 200  # alive meanwhile: no restart
    daemon.wait_for_log(r"ready: \d+ model", timeout=300)
    status, _, ready = get_json(daemon, "/ready")
    assert status == 200 and len(ready["models"]) == count


def test_sigterm_fails_ready_at_once_while_the_request_in_flight_finishes(start_daemon):
    daemon = start_daemon("--shutdown-grace-s", "30")
    completion = json.dumps({"model": "tiny", "prompt": "hello", "max_tokens": 8, "temperature": 0}).encode()
    generating = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    probing = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    try:
        # Both in flight, held open by bodies not yet complete: a completion and a
        # probe of /ready that a router sent just before the SIGTERM.
        generating.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(completion) + completion[:5])
        probing.sendall(b"GET /ready HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nx")
        wait_requests_in_flight(daemon, 2)
        daemon.signal(signal.SIGTERM)
        daemon.wait_for_log(r"shutting down")

        with pytest.raises(OSError):  # new connections are refused at once
            socket.create_connection(("127.0.0.1", daemon.port), timeout=2).close()
        probing.sendall(b"x")
        head, _, payload = read_until_closed(probing, timeout=30).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503"), head
        assert json.loads(payload)["error"]["message"] == "Shutting down"

        generating.sendall(completion[5:])
        head, _, payload = read_until_closed(generating, timeout=60).partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head + payload[:300]
        assert json.loads(payload)["choices"][0]["finish_reason"] == "length"
    finally:
        generating.close()
        probing.close()
    assert daemon.wait_exit(timeout=60) == 0
