"""vllm-router's kv_aware policy routing by sluice's KV-cache events: two replicas of
the tiny model publish their events (event_layout "map", the tagged-map layout
vllm-router 0.1.17 decodes; topic "", what it subscribes to for a static source),
each replica is given its own long prefix directly, and requests with either prefix
sent through the router land on the replica that holds it: only that replica's
prefix-cache hit counter moves.

The router attaches after a replica's first message (seq 0, AllBlocksCleared), so it
is given the replay sockets too: without them it counts the source as having a gap
and does not trust it. vllm-router comes from PyPI (pinned in requirements.txt with
the router tests); the test skips where the venv has none.
"""
import json
import re
import time

import pytest

from conftest import TINY_MODEL, Daemon
from http_util import parse_metrics, request
from router_util import ROUTER_BIN, Router

def post_json(target, path, body):
    status, _, raw = request(target, "POST", path, body=json.dumps(body),
                             headers={"Content-Type": "application/json"}, timeout=60)
    assert status == 200, raw
    return json.loads(raw)


def prefix_hits(replica):
    samples = parse_metrics(request(replica, "GET", "/metrics")[2].decode())
    return sum(value for (name, _), value in samples.items() if name == "sluice_prefix_cache_hits_total")


def test_kv_aware_routes_each_prefix_to_the_replica_that_holds_it():
    if not ROUTER_BIN.exists():
        pytest.skip(f"{ROUTER_BIN} is missing: `make venv` installs vllm-router")
    replicas, sources, router = [], [], None
    try:
        for _ in range(2):
            config = {"enable_kv_cache_events": True, "endpoint": "tcp://127.0.0.1:*",
                      "replay_endpoint": "tcp://127.0.0.1:*", "topic": "", "event_layout": "map"}
            replica = Daemon(["--host", "127.0.0.1", "--port", "0", "--model", f"tiny={TINY_MODEL}",
                              "--kv-cache-bytes", str(16 << 20), "--compute-threads", "1",
                              "--kv-events-config", json.dumps(config)])
            replicas.append(replica)
            replica.wait_listening()
            replica.wait_ready()
            match = re.search(r"KV-cache events on (tcp://\S+) \(topic \"\", replay on (tcp://\S+)\)", replica.log)
            assert match, replica.log
            sources += ["--kv-event-source", f"{replica.url}={match.group(1)}",
                        "--kv-event-replay-source", f"{replica.url}={match.group(2)}"]
        router = Router(replicas, "kv_aware", "--kv-event-block-size", "16", "--kv-event-model", "tiny", *sources)

        # Each replica computes its own prefix, directly: one message each (seq 1,
        # after the AllBlocksCleared of seq 0). The router learns it from the events
        # alone; wait until it has applied both (its debug log says so), bounded.
        prefixes = [" ".join(f"{word}{i}" for i in range(20)) for word in ("apple", "zebra")]
        for replica, prefix in zip(replicas, prefixes):
            post_json(replica, "/v1/completions", {"model": "tiny", "prompt": prefix, "max_tokens": 1})
        deadline = time.monotonic() + 30
        while not all(re.search(rf"sequence advanced source={re.escape(r.url)} rank=0 seq=[1-9]", router.log)
                      for r in replicas):
            assert time.monotonic() < deadline, f"the router applied no event:\n{router.log[-4000:]}"
            time.sleep(0.05)

        # Through the router, each prefix lands on the replica that holds it: only
        # that replica's prefix-cache hits move.
        for round_ in range(3):
            for which, prefix in enumerate(prefixes):
                before = [prefix_hits(r) for r in replicas]
                post_json(router, "/v1/completions",
                          {"model": "tiny", "prompt": f"{prefix} tail{round_}", "max_tokens": 1})
                # The counters are published after the step that answered: wait for one to move.
                deadline = time.monotonic() + 10
                while (after := [prefix_hits(r) for r in replicas]) == before and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert [a > b for b, a in zip(before, after)] == [i == which for i in range(2)], (
                    round_, which, before, after, router.log[-4000:])
        assert re.search(r"credited_prefix_tokens=[1-9]\d*", router.log), router.log[-4000:]
    finally:
        if router:
            router.stop()
        for replica in replicas:
            replica.kill()
