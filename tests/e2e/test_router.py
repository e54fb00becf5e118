"""Two sluice replicas behind vllm-router, the existing router from PyPI (pinned in
requirements.txt), all on 127.0.0.1: it proxies completions, chat and SSE streams
unchanged, `cache_aware` keeps a shared prefix on one replica, a killed replica is
dropped after the router's health check with no failure after it, and
`power_of_two` reads each replica's `GET /get_load`.

What the router reads from a replica is written down in docs/scaling-out.md.
Each router here polls every second so that nothing waits long; every wait is on
an event (a log line, an answer) with a generous limit.
"""
import json
import re
import threading
import time

import pytest

from conftest import TINY_MODEL, start_module_daemon
from http_util import metric, parse_metrics, request
from router_util import Router

# Two replicas share the machine: a small KV cache (4096 blocks: a quick start, room
# to spare) and one compute thread each.
REPLICA_ARGS = ("--kv-cache-bytes", str(16 << 20), "--compute-threads", "1")

@pytest.fixture
def start_router():
    started = []

    def start(replicas, policy, *extra):
        for attempt in range(3):  # a free port may be taken before the router binds it
            try:
                router = Router(replicas, policy, *extra)
                started.append(router)
                return router
            except AssertionError as error:
                if attempt == 2 or "Address already in use" not in str(error):
                    raise

    yield start
    for router in started:
        router.stop()


def start_replica():
    return start_module_daemon("--model", f"tiny={TINY_MODEL}", *REPLICA_ARGS)


@pytest.fixture(scope="module")
def replicas():
    """Two replicas of the tiny model, shared by the tests that kill neither."""
    pair = []
    try:
        pair.append(start_replica())
        pair.append(start_replica())
        yield pair
    finally:
        for replica in pair:
            replica.kill()


def post(target, path, body, timeout=60):
    return request(target, "POST", path, body=json.dumps(body),
                   headers={"Content-Type": "application/json"}, timeout=timeout)


def served(replica, route="/v1/completions"):
    """How many requests to `route` the replica answered with 200 (its access log)."""
    return replica.count_log(served_line(route))


def served_line(route):
    return rf'"POST {re.escape(route)}" 200 '


def wait_until(condition, what, timeout=60.0):
    """The access log line and the counters follow the response by a moment: wait."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.02)


def prefix_counters(replica):
    samples = parse_metrics(request(replica, "GET", "/metrics")[2].decode())
    return (metric(samples, "sluice_prefix_cache_hits_total", model_name="tiny"),
            metric(samples, "sluice_prefix_cache_queries_total", model_name="tiny"))


# The id and creation time differ from one response to the next; nothing else may.
RESPONSE_ID = re.compile(rb'"id":"(?:chatcmpl|cmpl)-[0-9a-f]+"')
CREATED = re.compile(rb'"created":\d+')


def normalized(body):
    body, ids = RESPONSE_ID.subn(b'"id":"ID"', body)
    body, times = CREATED.subn(b'"created":0', body)
    assert ids >= 1 and times == ids, body
    return body


GREEDY_CASES = [
    ("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 8}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Say something."}], "max_tokens": 8}),
    ("/v1/completions", {"prompt": "The river", "max_tokens": 8, "stream": True}),
    ("/v1/chat/completions",
     {"messages": [{"role": "user", "content": "Tell a story."}], "max_tokens": 8, "stream": True,
      "stream_options": {"include_usage": True}}),
]


def test_router_answers_byte_identical_to_a_replica(replicas, start_router):
    router = start_router(replicas, "round_robin")
    direct = replicas[0]
    before = [served(r, path) for r in replicas for path in ("/v1/completions", "/v1/chat/completions")]
    for path, fields in GREEDY_CASES:
        body = {"model": "tiny", "temperature": 0, "seed": 7, **fields}
        for replica in replicas:  # the prompt's full blocks cached on both, as they will
            assert post(replica, path, body)[0] == 200  # be for every answer compared
        status, head, expected = post(direct, path, body)
        assert status == 200, expected
        for _ in replicas:  # round robin: one through each replica
            status, routed_head, routed = post(router, path, body)
            assert status == 200, routed
            assert routed_head["content-type"] == head["content-type"]
            assert normalized(routed) == normalized(expected)
        if fields.get("stream"):
            assert expected.rstrip().endswith(b"data: [DONE]"), expected
    # Per case: one warm-up on each replica, the reference on replica 0, one through
    # the router on each replica.
    expected_counts = [b + n for b, n in zip(before, [6, 6, 4, 4])]

    def counts():
        return [served(r, path) for r in replicas for path in ("/v1/completions", "/v1/chat/completions")]

    wait_until(lambda: sum(counts()) >= sum(expected_counts), lambda: (counts(), expected_counts))
    assert counts() == expected_counts


def test_cache_aware_keeps_a_shared_prefix_on_one_replica(replicas, start_router):
    router = start_router(replicas, "cache_aware")
    prefix = " ".join(f"word{i}" for i in range(40))
    status, _, raw = post(replicas[0], "/tokenize", {"model": "tiny", "prompt": prefix})
    assert status == 200, raw
    full_blocks = len(json.loads(raw)["tokens"]) // 16
    assert full_blocks >= 8  # a long prefix: most of the tiny model's 256-token context
    served_before = [served(r) for r in replicas]
    hits_before = [prefix_counters(r)[0] for r in replicas]
    count = 6
    for i in range(count):
        body = {"model": "tiny", "prompt": f"{prefix} question {i}", "max_tokens": 4, "temperature": 0}
        status, _, raw = post(router, "/v1/completions", body)
        assert status == 200, raw

    def landed():
        return [served(r) - b for r, b in zip(replicas, served_before)]

    wait_until(lambda: sum(landed()) >= count, landed)
    assert sorted(landed()) == [0, count], landed()
    chosen = landed().index(count)

    def hits():
        return [prefix_counters(r)[0] - b for r, b in zip(replicas, hits_before)]

    # Every request after the first reuses the prefix's full blocks (bar the one the
    # suffix may re-tokenize) on the replica that holds them; the other saw none.
    wait_until(lambda: hits()[chosen] >= (count - 1) * (full_blocks - 1) * 16, hits)
    assert hits()[1 - chosen] == 0, hits()


def test_a_killed_replica_is_dropped_after_the_health_check(start_router):
    pair = [start_replica()]
    try:
        pair.append(start_replica())
        # No retry and no circuit breaker: only the health check keeps requests off
        # the dead replica, and a request sent to it would fail where the client sees it.
        router = start_router(pair, "round_robin", "--disable-retries", "--disable-circuit-breaker")
        survivor, victim = pair
        results = []  # (sent after the router marked the victim unhealthy, status, body)
        unhealthy = threading.Event()
        stop = threading.Event()

        def client():
            for i in range(2000):  # bounded; stopped long before
                if stop.is_set():
                    return
                after = unhealthy.is_set()
                body = {"model": "tiny", "prompt": f"request {i}", "max_tokens": 2, "temperature": 0}
                try:
                    status, _, raw = post(router, "/v1/completions", body, timeout=30)
                except OSError as error:
                    status, raw = None, repr(error).encode()
                results.append((after, status, raw))

        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        try:
            survivor.wait_for_log_count(r'"POST /v1/completions" 200 ', 2, timeout=60)
            victim.wait_for_log_count(r'"POST /v1/completions" 200 ', 2, timeout=60)
            victim.kill()  # SIGKILL mid-run: no draining, no goodbye
            deadline = time.monotonic() + 60
            while router.worker_health()[victim.url]:
                assert time.monotonic() < deadline, router.log
                time.sleep(0.05)
            assert router.worker_health()[survivor.url]
            unhealthy.set()
            deadline = time.monotonic() + 60
            while sum(after for after, _, _ in results) < 20:
                assert thread.is_alive() and time.monotonic() < deadline, results[-3:]
                time.sleep(0.05)
        finally:
            stop.set()
            thread.join(timeout=60)
        after_check = [(status, raw) for after, status, raw in results if after]
        assert len(after_check) >= 20
        failed = [(status, raw) for status, raw in after_check if status != 200]
        assert not failed, failed[:3]
        assert all(json.loads(raw)["choices"][0]["finish_reason"] for _, raw in after_check)
    finally:
        for replica in pair:
            replica.kill()


def test_power_of_two_reads_the_load_endpoint(replicas, start_router):
    for replica in replicas:
        status, _, raw = request(replica, "GET", "/get_load")
        assert status == 200, raw
        load = json.loads(raw)["load"]
        assert type(load) is int and load >= 0, raw  # the router reads an integer only
    polled = [replica.count_log(r'"GET /get_load" 200 ') for replica in replicas]
    router = start_router(replicas, "power_of_two")
    # The policy's background task polls every replica's /get_load each second.
    for replica, seen in zip(replicas, polled):
        replica.wait_for_log_count(r'"GET /get_load" 200 ', seen + 2, timeout=60)
    status, _, raw = request(router, "GET", "/get_loads")
    assert status == 200, raw
    loads = {entry["worker"]: entry["load"] for entry in json.loads(raw)["workers"]}
    assert sorted(loads) == sorted(r.url for r in replicas)
    assert all(load >= 0 for load in loads.values()), loads  # -1: the router could not read it
    for i in range(6):
        body = {"model": "tiny", "prompt": f"balanced {i}", "max_tokens": 2, "temperature": 0}
        status, _, raw = post(router, "/v1/completions", body)
        assert status == 200, raw
    decisions = re.findall(r"Power-of-two selection: (\S+)=(-?\d+) vs (\S+)=(-?\d+)", router.log)
    assert len(decisions) >= 6, router.log
