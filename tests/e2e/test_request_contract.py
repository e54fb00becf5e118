"""The OpenAI request contract against the real daemon: bounds checked before any
work (prompts x n, logit_bias, text length), all-or-nothing submission of several
prompts, context-length errors, OpenAI's and vLLM's extra fields, strict mode,
priority, and request deadlines as the official `openai` client sees them.
"""
import http.client
import json
import re
import threading
import time

import pytest

from http_util import assert_openai_error, parse_metrics, request

SMOL = "SmolLM2-135M-Instruct.Q4_1"


def post(daemon, path, body, timeout=60):
    data = json.dumps(body)
    return request(daemon, "POST", path, body=data, headers={"Content-Type": "application/json"},
                   timeout=timeout)


def post_json(daemon, path, body):
    status, _, raw = post(daemon, path, body)
    assert status == 200, raw
    return json.loads(raw)


def greedy(prompt, max_tokens=8, **extra):
    return {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}


def aborted_total(daemon):
    _, _, raw = request(daemon, "GET", "/metrics")
    return sum(value for (name, labels), value in parse_metrics(raw.decode()).items()
               if name == "sluice_request_success_total" and ("finished_reason", "abort") in labels)


# ---- bounds checked before any work -------------------------------------------


def engine_counts(daemon):
    """(prompt tokens computed, choices finished) from a /metrics scrape that shows
    nothing running or waiting: the engine publishes its counters and gauges as one
    snapshot, so every request that has answered is counted in it."""
    deadline = time.monotonic() + 30
    while True:
        _, _, raw = request(daemon, "GET", "/metrics")
        samples = parse_metrics(raw.decode())
        busy = sum(value for (name, _), value in samples.items()
                   if name in ("sluice_num_requests_running", "sluice_num_requests_waiting"))
        if busy == 0:
            break
        assert time.monotonic() < deadline, "the engine never went idle"
        time.sleep(0.05)
    return (sum(value for (name, _), value in samples.items() if name == "sluice_prompt_tokens_total"),
            sum(value for (name, _), value in samples.items() if name == "sluice_request_success_total"))


def test_many_prompts_times_n_are_refused_before_any_work(tiny):
    before = engine_counts(tiny)
    # 20,000 prompts, the last not even a prompt: counted, never read (reading them
    # would have named prompt[19999]), so not tokenized either.
    status, _, raw = post(tiny, "/v1/completions", greedy(["a"] * 19999 + [{"not": "a prompt"}], n=2))
    assert status == 400
    error = assert_openai_error(raw, param="prompt")
    assert "at most 256 prompts, got 20000" in error["message"], error
    # 17 prompts x n = 16: the parser's count of choices refuses it, before the
    # context-length check (which the 2 MB last prompt would fail) and tokenizing.
    status, _, raw = post(tiny, "/v1/completions", greedy(["a"] * 16 + ["word " * 400_000], n=16))
    assert status == 400
    error = assert_openai_error(raw, param="n")
    assert "asks for 272 choices" in error["message"], error
    # Nothing reached the engine: no prompt token computed, no choice finished.
    assert engine_counts(tiny) == before
    assert request(tiny, "GET", "/health")[0] == 200


def test_n_limit_says_one_number(tiny):
    for n in (0, 17):
        status, _, raw = post(tiny, "/v1/completions", greedy("x", n=n))
        assert status == 400
        assert "between 1 and 16" in assert_openai_error(raw, param="n")["message"]


def test_logit_bias_is_capped_and_held_to_the_vocabulary(tiny):
    big = {str(i): 1 for i in range(301)}
    status, _, raw = post(tiny, "/v1/completions", greedy("x", logit_bias=big))
    assert status == 400
    assert "300" in assert_openai_error(raw, param="logit_bias")["message"]
    status, _, raw = post(tiny, "/v1/completions", greedy("x", logit_bias={"2000000000": 1}))
    assert status == 400
    assert_openai_error(raw, param="logit_bias")
    ok = post_json(tiny, "/v1/completions", greedy("x", logit_bias={str(i): 1 for i in range(300)}))
    assert ok["choices"][0]["finish_reason"] in ("length", "stop")


def test_a_text_too_long_for_the_context_is_refused_before_tokenizing(tiny):
    status, _, raw = post(tiny, "/v1/completions", greedy("word " * 400_000))  # 2 MB
    assert status == 400
    error = assert_openai_error(raw, param="prompt", code="context_length_exceeded")
    # Counted from the bytes (the message says so), not from tokens.
    assert "bytes long, at least" in error["message"], error


# ---- all or nothing; context-length errors --------------------------------------


def test_a_bad_later_prompt_enqueues_and_aborts_nothing(tiny):
    _, finished_before = engine_counts(tiny)
    aborted_before = aborted_total(tiny)
    status, _, raw = post(tiny, "/v1/completions", greedy([[5, 6, 7] * 10, [5, 6, 2000000000]], max_tokens=200))
    assert status == 400
    assert_openai_error(raw, param="prompt")
    # Then a request of its own, sent once the 400 is in. The engine thread takes its
    # inbox and its aborts in order, so whatever the bad request queued or aborted got
    # there first. engine_counts waits for an idle snapshot published after this request
    # finished (it runs over several steps: no earlier idle snapshot stands in), which
    # counts every choice finished so far; one still running (the first prompt's 200
    # tokens, had it been queued) keeps the engine busy until it is counted too.
    later = post_json(tiny, "/v1/completions", greedy("x", max_tokens=4, ignore_eos=True))
    assert later["choices"][0]["finish_reason"] == "length"
    _, finished_after = engine_counts(tiny)
    assert aborted_total(tiny) == aborted_before
    assert finished_after == finished_before + 1, "choices finished besides the later request's one"


def test_context_length_errors_name_their_field(tiny):
    status, _, raw = post(tiny, "/v1/completions", greedy([5] * 300, max_tokens=1))
    assert status == 400
    assert_openai_error(raw, param="prompt", code="context_length_exceeded")
    status, _, raw = post(tiny, "/v1/completions", greedy([5] * 10, max_tokens=250))
    assert status == 400
    assert_openai_error(raw, param="max_tokens", code="context_length_exceeded")


def test_chat_context_length_error_names_messages(smol):
    body = {"model": SMOL, "messages": [{"role": "user", "content": "word " * 300_000}]}
    status, _, raw = post(smol, "/v1/chat/completions", body)
    assert status == 400
    assert_openai_error(raw, param="messages", code="context_length_exceeded")
    body = {"model": SMOL, "messages": [{"role": "user", "content": "word " * 9000}], "max_tokens": 1}
    status, _, raw = post(smol, "/v1/chat/completions", body)
    assert status == 400
    assert_openai_error(raw, param="messages", code="context_length_exceeded")


# ---- OpenAI's fields, vLLM's extras, strict mode, priority -----------------------


def test_unknown_fields_are_ignored_unless_strict(tiny, start_daemon):
    assert post_json(tiny, "/v1/completions", greedy("x", bogus=1))["choices"]
    strict = start_daemon("--strict-request-fields", "true")
    status, _, raw = post(strict, "/v1/completions", greedy("x", bogus=1))
    assert status == 400
    assert_openai_error(raw, param="bogus")
    # OpenAI's own fields are never "unknown".
    assert post_json(strict, "/v1/completions", greedy("x", user="u"))["choices"]


def test_priority_is_ignored_unless_allowed_then_bounded(tiny, start_daemon):
    assert post_json(tiny, "/v1/completions", greedy("x", priority=-2_000_000_000))["choices"]
    # Off, any integer is accepted and ignored, as docs/configuration.md says: no range to check.
    assert post_json(tiny, "/v1/completions", greedy("x", priority=10**12))["choices"]
    assert post_json(tiny, "/v1/completions", greedy("x", priority=-1e300))["choices"]
    status, _, raw = post(tiny, "/v1/completions", greedy("x", priority="high"))
    assert status == 400
    assert_openai_error(raw, param="priority")
    allowing = start_daemon("--allow-priority", "true")
    assert post_json(allowing, "/v1/completions", greedy("x", priority=-5))["choices"]
    status, _, raw = post(allowing, "/v1/completions", greedy("x", priority=1001))
    assert status == 400
    assert_openai_error(raw, param="priority")


def wait_queued_besides(daemon, blocker_id, num_blocker_prompts, count):
    """Waits until `count` sequences besides the blocker's are running or waiting in the
    engine. The blocker's own are its prompts not yet finished: its finish lines are
    counted before the scrape, so a late line can only make the count look smaller."""
    deadline = time.monotonic() + 30
    while True:
        num_finished = daemon.count_log(rf"request {blocker_id}-\d+ finished")
        assert num_finished < num_blocker_prompts, "the blocker ended before the others were queued"
        samples = parse_metrics(request(daemon, "GET", "/metrics")[2].decode())
        in_engine = sum(value for (name, _), value in samples.items()
                        if name in ("sluice_num_requests_running", "sluice_num_requests_waiting"))
        if in_engine - (num_blocker_prompts - num_finished) >= count:
            return
        assert time.monotonic() < deadline, f"{count} requests never queued beside the blocker"
        time.sleep(0.02)


def test_allowed_priority_serves_the_lower_value_first(start_daemon):
    # One sequence at a time. A blocker of many prompts at priority -100 holds the
    # engine while a request of priority 5 is queued, then one of priority -5; the
    # blocker is then cut off. First come first served (or fair order), the 5 would
    # go first; by priority the -5 does.
    daemon = start_daemon("--allow-priority", "true", "--max-num-seqs", "1")
    num_blocker_prompts = 64
    blocker = greedy([f"blocker {i}" for i in range(num_blocker_prompts)], max_tokens=200, ignore_eos=True,
                     stream=True, priority=-100)
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=120)
    ids = {}

    def send(name, priority):
        ids[name] = post_json(daemon, "/v1/completions", greedy("x", max_tokens=2, priority=priority))["id"]

    threads = [threading.Thread(target=send, args=("low", 5)), threading.Thread(target=send, args=("high", -5))]
    try:
        conn.request("POST", "/v1/completions", body=json.dumps(blocker),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200
        ids["blocker"] = json.loads(response.readline()[len(b"data: "):])["id"]  # its first prompt runs
        for count, thread in enumerate(threads, start=1):
            thread.start()
            wait_queued_besides(daemon, ids["blocker"], num_blocker_prompts, count)
    finally:
        conn.close()  # the blocker's client leaves: what is left of it is aborted
    for thread in threads:
        thread.join(timeout=120)
    assert set(ids) == {"blocker", "low", "high"}, daemon.log[-2000:]
    daemon.wait_for_log_count(rf"request {ids['blocker']}-\d+ finished", num_blocker_prompts)
    daemon.wait_for_log(rf"request {ids['low']}-0 finished")
    # The engine logs each prompt's end in the order they finished.
    order = re.findall(rf"request ({ids['blocker']}-\d+|{ids['low']}-0|{ids['high']}-0) finished", daemon.log)
    assert order[-2:] == [f"{ids['high']}-0", f"{ids['low']}-0"], order
    assert len(order) == num_blocker_prompts + 2, order


def test_a_stop_string_has_a_length_bound(tiny):
    # Each choice holds back as much text as its longest stop string: 2 MB stop
    # strings held 1.76 GiB for 64 streams.
    assert post_json(tiny, "/v1/completions", greedy("x", stop=["a" * 1024]))["choices"]
    status, _, raw = post(tiny, "/v1/completions", greedy("x", stop=["b", "a" * 1025]))
    assert status == 400
    error = assert_openai_error(raw, param="stop")
    assert "1024 bytes" in error["message"], error


def test_chat_template_kwargs_cannot_replace_the_messages(smol):
    # The messages reach the template only after their checks (roles, sizes).
    for key in ["messages", "tools"]:
        body = {"model": SMOL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
                "chat_template_kwargs": {key: [{"role": "bogus", "content": "x" * 10}]}}
        status, _, raw = post(smol, "/v1/chat/completions", body)
        assert status == 400, raw
        assert_openai_error(raw, param="chat_template_kwargs")
    body = {"model": SMOL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
            "chat_template_kwargs": {"enable_thinking": False}}
    assert post_json(smol, "/v1/chat/completions", body)["choices"]


def test_stop_token_ids_and_include_stop_str_in_output(tiny):
    free = post_json(tiny, "/v1/completions", greedy([5, 6, 7, 8], max_tokens=12, ignore_eos=True))
    text = free["choices"][0]["text"]
    assert len(text) >= 4
    stop = text[2:4]
    at = text.find(stop)
    cut = post_json(tiny, "/v1/completions", greedy([5, 6, 7, 8], max_tokens=12, ignore_eos=True, stop=[stop]))
    assert cut["choices"][0]["text"] == text[:at]
    kept = post_json(tiny, "/v1/completions", greedy([5, 6, 7, 8], max_tokens=12, ignore_eos=True, stop=[stop],
                                                     include_stop_str_in_output=True))
    assert kept["choices"][0]["text"] == text[:at + len(stop)]
    assert kept["choices"][0]["finish_reason"] == "stop"

    # A bias of 100 makes token 42 the greedy choice at every step.
    forced = {"logit_bias": {"42": 100}, "ignore_eos": True, "stop_token_ids": [42]}
    stopped = post_json(tiny, "/v1/completions", greedy([5, 6, 7, 8], max_tokens=12, **forced))
    assert stopped["choices"][0]["finish_reason"] == "stop"
    assert stopped["usage"]["completion_tokens"] == 1
    later = post_json(tiny, "/v1/completions", greedy([5, 6, 7, 8], max_tokens=12, min_tokens=4, **forced))
    assert later["choices"][0]["finish_reason"] == "stop"
    assert later["usage"]["completion_tokens"] == 5  # masked for 4 tokens, then it stops


def test_continuous_usage_stats_put_usage_in_every_chunk(tiny):
    body = greedy("count", max_tokens=6, ignore_eos=True, stream=True,
                  stream_options={"include_usage": True, "continuous_usage_stats": True})
    status, _, raw = post(tiny, "/v1/completions", body)
    assert status == 200
    events = [e[len("data: "):] for e in raw.decode().split("\n\n") if e]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c.get("usage") for c in chunks)
    counts = [c["usage"]["completion_tokens"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 6


def test_openai_client_chat_with_openai_only_fields(smol):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=smol.url + "/v1", api_key="x", max_retries=0, timeout=60)
    reply = client.chat.completions.create(
        model=SMOL, messages=[{"role": "user", "content": "Say hi."}], max_tokens=3, temperature=0,
        store=False, metadata={"k": "v"}, service_tier="auto", user="u", modalities=["text"],
        parallel_tool_calls=False, extra_body={"skip_special_tokens": True, "chat_template_kwargs": {}})
    assert reply.choices[0].finish_reason in ("length", "stop")


# ---- deadlines ------------------------------------------------------------------


def test_a_deadline_returns_the_partial_text_in_one_request(smol):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=smol.url + "/v1", api_key="x", timeout=60)  # default retries
    before = smol.count_log(r'"POST /v1/completions"')
    body = dict(model=SMOL, prompt="Once upon a time", max_tokens=4000, temperature=0,
                extra_body={"ignore_eos": True, "timeout": 2.0})
    try:
        reply = client.completions.create(**body)
    except openai.BadRequestError as e:  # not even the first token within 2 s
        assert e.code == "timeout"
        reply = None
    # The client has made all its tries; the log may lag the reply it read.
    assert smol.wait_for_log_count(r'"POST /v1/completions"', before + 1) == before + 1  # never retried
    if reply is None:
        pytest.skip("the machine is too loaded to generate a token within 2 s")
    assert reply.choices[0].finish_reason == "timeout"
    assert reply.choices[0].text
    assert reply.usage.completion_tokens > 0

    chunks = list(client.completions.create(**body, stream=True))  # the client raises on an error event
    assert chunks[-1].choices[0].finish_reason == "timeout"


def test_a_deadline_that_passes_in_the_queue_is_one_non_retried_error(tiny):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=tiny.url + "/v1", api_key="x", timeout=60)  # default retries
    pattern = r'"POST /v1/completions" 400'
    before = tiny.count_log(pattern)
    with pytest.raises(openai.BadRequestError) as raised:
        # A microsecond: the deadline has passed before the engine first looks at it.
        client.completions.create(model="tiny", prompt="Hi", max_tokens=5, extra_body={"timeout": 1e-6})
    assert raised.value.code == "timeout"
    assert tiny.wait_for_log_count(pattern, before + 1) == before + 1  # never retried


# ---- log-probabilities: echoed prompts, logprobs 0, best_of -----------------------


def test_echo_with_logprobs_scores_the_prompt(tiny):
    prompt = [5, 6, 7, 8, 9, 10]
    body = greedy(prompt, max_tokens=0, echo=True, logprobs=2)
    scored = post_json(tiny, "/v1/completions", body)
    choice = scored["choices"][0]
    lp = choice["logprobs"]
    assert len(lp["tokens"]) == len(prompt)  # max_tokens 0: the prompt only
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert all(isinstance(x, float) and x <= 0 for x in lp["token_logprobs"][1:])
    assert all(token in top for token, top in zip(lp["tokens"][1:], lp["top_logprobs"][1:]))
    assert scored["usage"]["completion_tokens"] == 0
    assert choice["finish_reason"] == "length"

    # Generating too: the prompt's entries come first, the same as above.
    more = post_json(tiny, "/v1/completions", greedy(prompt, max_tokens=3, echo=True, logprobs=2, ignore_eos=True))
    more_lp = more["choices"][0]["logprobs"]
    assert len(more_lp["tokens"]) == len(prompt) + 3
    assert more_lp["token_logprobs"][:len(prompt)] == lp["token_logprobs"]
    assert more["choices"][0]["text"].startswith(choice["text"])


def test_logprobs_zero_shows_the_chosen_token(tiny):
    body = post_json(tiny, "/v1/completions", greedy("x", max_tokens=3, logprobs=0, ignore_eos=True))
    lp = body["choices"][0]["logprobs"]
    for token, logprob, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        assert top == {token: logprob}


def test_best_of_returns_the_most_likely_choices(tiny):
    common = {"model": "tiny", "prompt": "x", "max_tokens": 6, "temperature": 1.0, "seed": 11, "ignore_eos": True}
    every = post_json(tiny, "/v1/completions", {**common, "n": 4, "logprobs": 0})["choices"]
    sums = [sum(c["logprobs"]["token_logprobs"]) for c in every]
    best = post_json(tiny, "/v1/completions", {**common, "n": 1, "best_of": 4})
    assert len(best["choices"]) == 1
    assert best["choices"][0]["text"] == every[sums.index(max(sums))]["text"]
    assert best["choices"][0]["logprobs"] is None
    assert best["usage"]["completion_tokens"] == 4 * 6  # all generated choices count
    status, _, raw = post(tiny, "/v1/completions", {**common, "n": 1, "best_of": 2, "stream": True})
    assert status == 400
    assert_openai_error(raw, param="best_of")


def test_streamed_echo_with_logprobs_sends_the_scored_prompt_first(tiny):
    prompt = [5, 6, 7, 8, 9, 10]
    whole = post_json(tiny, "/v1/completions", greedy(prompt, max_tokens=3, echo=True, logprobs=1, ignore_eos=True))
    status, _, raw = post(tiny, "/v1/completions",
                          greedy(prompt, max_tokens=3, echo=True, logprobs=1, ignore_eos=True, stream=True))
    assert status == 200
    events = [e[len("data: "):] for e in raw.decode().split("\n\n") if e]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e)["choices"][0] for e in events[:-1]]
    first = chunks[0]["logprobs"]
    assert len(first["tokens"]) == len(prompt) and first["token_logprobs"][0] is None
    assert "".join(c["text"] for c in chunks) == whole["choices"][0]["text"]
    streamed = [x for c in chunks if c["logprobs"] for x in c["logprobs"]["token_logprobs"]]
    assert streamed == whole["choices"][0]["logprobs"]["token_logprobs"]
