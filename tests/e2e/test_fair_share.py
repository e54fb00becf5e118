"""One client must not starve or bloat the others, against the real daemon: one
request cannot take the whole queue nor hold it ahead of a later small request, a
request the busy queue never admitted is told to retry, and a response that would
hold too many log-probabilities is refused before any work.
"""
import http.client
import json
import re

import pytest

from http_util import assert_openai_error, request


def post(daemon, body, timeout=60):
    return request(daemon, "POST", "/v1/completions", body=json.dumps(body),
                   headers={"Content-Type": "application/json"}, timeout=timeout)


def greedy(prompt, max_tokens, **extra):
    return {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}


def test_one_request_may_not_take_the_whole_queue(start_daemon):
    daemon = start_daemon("--max-waiting", "8")  # a quarter of it per request: 2
    status, _, raw = post(daemon, greedy(["a", "b", "c"], 2))
    assert status == 400, raw  # it could never be queued: not a 429 to retry
    error = assert_openai_error(raw, param="prompt")
    assert "max_waiting_per_request" in error["message"]
    status, _, raw = post(daemon, greedy("a", 2, n=3))
    assert status == 400, raw
    assert_openai_error(raw, param="n")
    status, _, raw = post(daemon, greedy(["a", "b"], 2))
    assert status == 200, raw
    assert len(json.loads(raw)["choices"]) == 2

    roomy = start_daemon("--max-waiting", "8", "--max-waiting-per-request", "3")
    assert post(roomy, greedy(["a", "b", "c"], 2))[0] == 200


def test_a_small_request_is_not_stuck_behind_a_big_one(start_daemon):
    daemon = start_daemon("--max-num-seqs", "1")
    # Six prompts of 200 tokens each, one at a time: far more than the moment it
    # takes to send the small request, however fast the machine.
    big = greedy([f"big prompt {i}" for i in range(6)], 200, ignore_eos=True, stream=True)
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=120)
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(big), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        first = response.readline()  # a token of its first prompt: the other five wait
        big_id = json.loads(first[len(b"data: "):])["id"]
        status, _, raw = post(daemon, greedy("small", 2, ignore_eos=True), timeout=120)
        assert status == 200, raw
        small_id = json.loads(raw)["id"]
    finally:
        conn.close()  # the rest of the big request is not needed: the disconnect aborts it
    daemon.wait_for_log(rf"request {big_id}-5 finished")
    daemon.wait_for_log(rf"request {small_id}-0 finished")
    # The engine logs the end of each prompt in the order they finished. First come
    # first served by sequence, the small request would come after all six.
    order = re.findall(rf"request ({big_id}-\d|{small_id}-0) finished", daemon.log)
    assert len(order) == 7, order
    assert order.index(f"{small_id}-0") < order.index(f"{big_id}-5"), order


def test_a_request_the_busy_queue_never_admitted_is_told_to_retry(start_daemon):
    # Every request's queue deadline passes before the engine first looks at it.
    daemon = start_daemon("--queue-timeout-s", "0.000001")
    status, headers, raw = post(daemon, greedy("Hi", 5))
    assert status == 503, raw
    assert_openai_error(raw, code="queue_timeout")
    assert headers["x-should-retry"] == "true"
    assert int(headers["retry-after"]) >= 1

    # The request's own deadline is still final: the same request would fail again.
    status, headers, raw = post(daemon, greedy("Hi", 5, timeout=1e-6))
    assert status == 400, raw
    assert_openai_error(raw, code="timeout")
    assert headers["x-should-retry"] == "false"

    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=daemon.url + "/v1", api_key="x", max_retries=1, timeout=60)
    pattern = r'"POST /v1/completions" 503'
    before = daemon.count_log(pattern)
    with pytest.raises(openai.InternalServerError):
        client.completions.create(model="tiny", prompt="Hi", max_tokens=5)
    # The client has made all its tries; the log may lag the replies it read.
    assert daemon.wait_for_log_count(pattern, before + 2) == before + 2  # retried once, as told


def test_a_response_that_would_hold_too_many_logprobs_is_refused(start_daemon):
    daemon = start_daemon("--max-response-logprobs", "5000")
    prompt = list(range(5, 105))  # 100 tokens
    hostile = {"model": "tiny", "prompt": [prompt, prompt], "n": 16, "echo": True, "logprobs": 20, "max_tokens": 0}
    status, _, raw = post(daemon, hostile)  # 2 x 16 x 100 x 21 = 67,200 entries
    assert status == 400, raw[:200]
    error = assert_openai_error(raw, param="logprobs")
    assert "max_response_logprobs" in error["message"]

    # Within the limit: every choice carries the prompt's entries, scored once.
    status, _, raw = post(daemon, {**hostile, "prompt": prompt[:20], "n": 2, "logprobs": 2, "max_tokens": 3,
                                   "ignore_eos": True})
    assert status == 200, raw
    choices = json.loads(raw)["choices"]
    assert len(choices) == 2
    for choice in choices:
        lp = choice["logprobs"]
        assert len(lp["tokens"]) == 20 + 3
        assert lp["tokens"][:20] == choices[0]["logprobs"]["tokens"][:20]
        assert lp["token_logprobs"][:20] == choices[0]["logprobs"]["token_logprobs"][:20]
        assert lp["token_logprobs"][0] is None
        assert lp["text_offset"] == sorted(lp["text_offset"])
        assert choice["text"].startswith(choices[0]["text"][:len(lp["tokens"][0])])
