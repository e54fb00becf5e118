"""The OpenAI generation API against the real daemon: /v1/completions and
/v1/chat/completions (whole and streamed), /tokenize and /detokenize, errors,
concurrency, client disconnects, and the official `openai` client.

The tiny fixture model is used where only speed matters (its text is noise); the
default SmolLM2 where the text must make sense.
"""
import http.client
import json
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import DEFAULT_MODEL, require_model
from http_util import assert_openai_error, parse_metrics, request

SMOL = "SmolLM2-135M-Instruct.Q4_1"


def post(daemon, path, body, timeout=60):
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    status, headers, raw = request(daemon, "POST", path, body=data,
                                   headers={"Content-Type": "application/json"}, timeout=timeout)
    return status, headers, raw


def post_json(daemon, path, body, timeout=60):
    status, headers, raw = post(daemon, path, body, timeout)
    assert status == 200, raw
    return json.loads(raw)


def stream_events(daemon, path, body, timeout=60):
    """Posts a streaming request; returns (headers, [event data strings])."""
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200, response.read()
        headers = {k.lower(): v for k, v in response.getheaders()}
        raw = response.read().decode()
    finally:
        conn.close()
    events = [block for block in raw.split("\n\n") if block]
    assert all(e.startswith("data: ") for e in events), raw
    return headers, [e[len("data: "):] for e in events]


def greedy(prompt, max_tokens=12, **extra):
    return {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, **extra}


# ---- /v1/completions --------------------------------------------------------


def test_completion_whole(tiny):
    body = post_json(tiny, "/v1/completions", greedy("hello world", 8))
    assert body["object"] == "text_completion"
    assert body["id"].startswith("cmpl-")
    assert body["model"] == "tiny"
    [choice] = body["choices"]
    assert choice["index"] == 0 and choice["finish_reason"] in ("length", "stop")
    assert isinstance(choice["text"], str)
    usage = body["usage"]
    assert usage["completion_tokens"] <= 8 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_completion_stream_matches_whole(tiny):
    whole = post_json(tiny, "/v1/completions", greedy("stream me", 10))
    headers, events = stream_events(
        tiny, "/v1/completions", greedy("stream me", 10, stream=True, stream_options={"include_usage": True}))
    assert headers["content-type"] == "text/event-stream"
    assert headers["cache-control"] == "no-cache"
    assert headers["transfer-encoding"] == "chunked"
    assert headers["x-request-id"]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == [] and usage_chunk["usage"] == whole["usage"]
    text = "".join(c["choices"][0]["text"] for c in chunks[:-1])
    assert text == whole["choices"][0]["text"]
    assert chunks[-2]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert all(c["usage"] is None for c in chunks[:-1])
    assert len({c["id"] for c in chunks}) == 1


def test_several_prompts_and_choices_are_merged(tiny):
    body = post_json(tiny, "/v1/completions",
                     {"model": "tiny", "prompt": ["one", "two"], "n": 2, "max_tokens": 4, "temperature": 0})
    assert [c["index"] for c in body["choices"]] == [0, 1, 2, 3]
    solo = [post_json(tiny, "/v1/completions", greedy(p, 4))["choices"][0]["text"] for p in ("one", "two")]
    texts = [c["text"] for c in body["choices"]]
    assert texts == [solo[0], solo[0], solo[1], solo[1]]


def test_token_prompt_and_echo(tiny):
    ids = post_json(tiny, "/tokenize", {"prompt": "hello"})["tokens"]
    by_text = post_json(tiny, "/v1/completions", greedy("hello", 5))
    by_ids = post_json(tiny, "/v1/completions", greedy(ids, 5))
    assert by_ids["choices"][0]["text"] == by_text["choices"][0]["text"]
    echoed = post_json(tiny, "/v1/completions", greedy("hello", 5, echo=True))
    assert echoed["choices"][0]["text"] == "hello" + by_text["choices"][0]["text"]


def test_greedy_is_deterministic(tiny):
    texts = {post_json(tiny, "/v1/completions", greedy("determinism", 16))["choices"][0]["text"] for _ in range(3)}
    assert len(texts) == 1


def test_seeded_sampling_is_reproducible(tiny):
    body = {"model": "tiny", "prompt": "seeded", "max_tokens": 12, "temperature": 1.0, "seed": 7}
    a = post_json(tiny, "/v1/completions", body)["choices"][0]["text"]
    b = post_json(tiny, "/v1/completions", body)["choices"][0]["text"]
    assert a == b


def test_concurrent_streams_equal_their_solo_text(tiny):
    prompts = [f"prompt number {i} says" for i in range(16)]
    solo = [post_json(tiny, "/v1/completions", greedy(p, 24))["choices"][0]["text"] for p in prompts]

    def streamed(prompt):
        _, events = stream_events(tiny, "/v1/completions", greedy(prompt, 24, stream=True))
        assert events[-1] == "[DONE]"
        return "".join(json.loads(e)["choices"][0]["text"] for e in events[:-1])

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(streamed, prompts)) == solo


def metric_total(daemon, name):
    status, _, raw = request(daemon, "GET", "/metrics")
    assert status == 200
    return sum(value for (metric_name, labels), value in parse_metrics(raw.decode()).items()
               if metric_name == name and ("model_name", "tiny") in labels)


def test_prefix_cache_hit_is_counted_and_gives_the_same_text(tiny):
    prompt = "A shared system prompt that is long enough to fill several KV blocks. " * 2
    hits_before = metric_total(tiny, "sluice_prefix_cache_hits_total")
    first = post_json(tiny, "/v1/completions", greedy(prompt, 16))
    second = post_json(tiny, "/v1/completions", greedy(prompt, 16))
    assert second["choices"][0]["text"] == first["choices"][0]["text"]
    assert second["usage"]["prompt_tokens_details"]["cached_tokens"] >= 16
    # The engine publishes its counters once per step: give it a moment.
    deadline = time.monotonic() + 60  # generous: the machine may be loaded, or running ASan
    while metric_total(tiny, "sluice_prefix_cache_hits_total") < hits_before + 16:
        assert time.monotonic() < deadline, "prefix cache hits never showed in /metrics"
        time.sleep(0.05)


# ---- errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,body,status,param",
    [
        ("/v1/completions", b"{not json", 400, None),
        ("/v1/completions", {"model": "tiny", "prompt": 5}, 400, "prompt"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "max_tokens": "ten"}, 400, "max_tokens"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "temperature": 3}, 400, "temperature"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "top_p": 0}, 400, "top_p"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "timeout": 100000}, 400, "timeout"),
        ("/v1/completions", {"model": "tiny", "prompt": "x", "logit_bias": {"2000000000": 1}}, 400, "logit_bias"),
        ("/v1/completions", {"model": "nope", "prompt": "x"}, 404, "model"),
        ("/v1/chat/completions", {"model": "tiny", "messages": []}, 400, "messages"),
        ("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user"}]}, 400, None),
        ("/v1/chat/completions", {"model": "nope", "messages": [{"role": "user", "content": "x"}]}, 404, "model"),
        ("/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "x"}], "n": 0}, 400, "n"),
        ("/tokenize", {"model": "nope", "prompt": "x"}, 404, "model"),
        ("/detokenize", {"tokens": [-1]}, 400, "tokens"),
    ],
)
def test_bad_requests_get_4xx_while_good_ones_run(tiny, path, body, status, param):
    result = {}

    def good():
        result["body"] = post_json(tiny, "/v1/completions", greedy("still fine", 32))

    worker = threading.Thread(target=good)
    worker.start()
    got, headers, raw = post(tiny, path, body)
    worker.join(timeout=60)
    assert got == status, raw
    assert headers["content-type"] == "application/json"
    error = assert_openai_error(raw, param=param)
    if status == 404:
        assert error["code"] == "model_not_found"
    assert result["body"]["choices"][0]["finish_reason"] in ("length", "stop")


# ---- /tokenize and /detokenize -------------------------------------------------


def test_tokenize_detokenize_round_trip(smol):
    text = "Hello, world! Tokenizers split text into pieces."
    tokenized = post_json(smol, "/tokenize", {"model": SMOL, "prompt": text, "return_token_strs": True})
    assert tokenized["count"] == len(tokenized["tokens"]) == len(tokenized["token_strs"])
    assert tokenized["max_model_len"] == 8192
    detokenized = post_json(smol, "/detokenize", {"model": SMOL, "tokens": tokenized["tokens"]})
    assert detokenized["prompt"] == text
    chat = post_json(smol, "/tokenize", {"messages": [{"role": "user", "content": "hi"}]})
    rendered = post_json(smol, "/detokenize", {"tokens": chat["tokens"]})["prompt"]
    assert "<|im_start|>user\nhi<|im_end|>" in rendered and rendered.endswith("<|im_start|>assistant\n")


# ---- chat with SmolLM2 --------------------------------------------------------

PARIS = {"model": SMOL, "messages": [{"role": "user", "content": "What is the capital of France?"}],
         "max_tokens": 30, "temperature": 0}


def test_chat_whole(smol):
    body = post_json(smol, "/v1/chat/completions", PARIS, timeout=120)
    assert body["object"] == "chat.completion"
    [choice] = body["choices"]
    assert choice["message"]["role"] == "assistant"
    assert "Paris" in choice["message"]["content"]
    assert choice["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] > 10


def test_chat_stream(smol):
    whole = post_json(smol, "/v1/chat/completions", PARIS, timeout=120)
    _, events = stream_events(smol, "/v1/chat/completions",
                              {**PARIS, "stream": True, "stream_options": {"include_usage": True}}, timeout=120)
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[:-1] if c["choices"])
    assert content == whole["choices"][0]["message"]["content"]
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"] == whole["usage"]


def test_completion_text_makes_sense(smol):
    body = post_json(smol, "/v1/completions",
                     {"model": SMOL, "prompt": "The capital of France is", "max_tokens": 4, "temperature": 0})
    assert "Paris" in body["choices"][0]["text"]


def engine_metric(daemon, name):
    status, _, raw = request(daemon, "GET", "/metrics")
    assert status == 200
    samples = parse_metrics(raw.decode())
    return {labels: value for (metric, labels), value in samples.items() if metric == name}


@pytest.mark.parametrize("prompt, n, choices", [
    ("Once upon a time", 1, 1),
    # A multi-prompt request: every prompt's choices go with the connection.
    (["Once upon a time", "In a galaxy far away", "The weather today"], 2, 6),
])
def test_disconnect_mid_stream_aborts_every_choice_and_frees_the_blocks(smol, prompt, n, choices):
    def aborted():
        return sum(v for labels, v in engine_metric(smol, "sluice_request_success_total").items()
                   if dict(labels).get("finished_reason") == "abort")

    before = aborted()
    body = {"model": SMOL, "prompt": prompt, "n": n, "max_tokens": 4000, "ignore_eos": True,
            "temperature": 0, "stream": True}
    payload = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", smol.port), timeout=30) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        received = b""
        while received.count(b"data: ") < 3:
            chunk = sock.recv(65536)
            assert chunk, received
            received += chunk
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        running = sum(engine_metric(smol, "sluice_num_requests_running").values())
        usage = sum(engine_metric(smol, "sluice_kv_cache_usage_perc").values())
        if aborted() >= before + choices and running == 0 and usage == 0:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"aborts {aborted() - before} of {choices}, running {running}, KV usage {usage}:\n"
                    f"{smol.log[-3000:]}")
    assert aborted() == before + choices
    assert "finished (abort)" in smol.log


# ---- the official openai client -----------------------------------------------


@pytest.fixture(scope="module")
def client(smol):
    openai = pytest.importorskip("openai")
    return openai.OpenAI(base_url=smol.url + "/v1", api_key="x", max_retries=0, timeout=120)


def test_openai_client_completions(client):
    whole = client.completions.create(model=SMOL, prompt="The capital of France is", max_tokens=4, temperature=0)
    assert "Paris" in whole.choices[0].text
    assert whole.usage.completion_tokens == 4
    stream = client.completions.create(model=SMOL, prompt="The capital of France is", max_tokens=4,
                                       temperature=0, stream=True)
    assert "".join(chunk.choices[0].text for chunk in stream if chunk.choices) == whole.choices[0].text


def test_openai_client_chat(client):
    messages = PARIS["messages"]
    whole = client.chat.completions.create(model=SMOL, messages=messages, max_tokens=30, temperature=0)
    assert "Paris" in whole.choices[0].message.content
    assert whole.choices[0].finish_reason == "stop"
    stream = client.chat.completions.create(model=SMOL, messages=messages, max_tokens=30, temperature=0,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == whole.choices[0].message.content
    assert chunks[-1].usage.total_tokens == whole.usage.total_tokens


def test_shutdown_ends_a_running_stream_with_a_finish(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_daemon("--shutdown-grace-s", "1", model=DEFAULT_MODEL)
    body = {"model": SMOL, "prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True,
            "temperature": 0, "stream": True}
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=60)
    conn.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    first = response.readline()  # the first event is out: the request is running
    assert first.startswith(b"data: ")
    daemon.signal()
    raw = (first + response.read()).decode()
    conn.close()
    events = [e[len("data: "):] for e in raw.split("\n\n") if e]
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "abort"
    assert daemon.wait_exit() == 0


def test_a_full_queue_answers_429(start_daemon):
    require_model(DEFAULT_MODEL, "`make model`")
    daemon = start_daemon("--max-num-seqs", "1", "--max-waiting", "1", model=DEFAULT_MODEL)
    body = {"model": SMOL, "prompt": "Count:", "max_tokens": 40, "ignore_eos": True, "temperature": 0}
    with ThreadPoolExecutor(5) as pool:
        results = list(pool.map(lambda _: post(daemon, "/v1/completions", body), range(5)))
    statuses = sorted(status for status, _, _ in results)
    assert 200 in statuses and 429 in statuses, statuses
    for status, headers, raw in results:
        if status == 429:
            assert assert_openai_error(raw)["code"] == "queue_full"
            assert int(headers["retry-after"]) >= 1


def test_a_request_past_its_deadline_ends_with_its_partial_text(smol):
    body = {"model": SMOL, "prompt": "Once upon a time", "max_tokens": 4000, "ignore_eos": True,
            "temperature": 0, "timeout": 2.0}
    status, _, raw = post(smol, "/v1/completions", body)
    if status == 400:  # not even the first token within 2 s
        assert_openai_error(raw, code="timeout")
        pytest.skip("the machine is too loaded to generate a token within 2 s")
    assert status == 200, raw
    choice = json.loads(raw)["choices"][0]
    assert choice["finish_reason"] == "timeout"
    assert choice["text"]

    _, events = stream_events(smol, "/v1/completions", {**body, "stream": True})
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["choices"][0]["finish_reason"] == "timeout"


def test_engine_metrics_match_the_request_made(tiny):
    names = ["sluice_prompt_tokens_total", "sluice_generation_tokens_total",
             "sluice_time_to_first_token_seconds_count", "sluice_e2e_request_latency_seconds_count",
             "sluice_request_prompt_tokens_sum", "sluice_request_generation_tokens_sum"]
    before = {name: metric_total(tiny, name) for name in names}
    length_before = metric_total_labelled(tiny, "sluice_request_success_total", "length")
    usage = post_json(tiny, "/v1/completions", greedy("count me exactly", 9, ignore_eos=True))["usage"]
    expected = {
        "sluice_prompt_tokens_total": usage["prompt_tokens"],
        "sluice_generation_tokens_total": usage["completion_tokens"],
        "sluice_time_to_first_token_seconds_count": 1,
        "sluice_e2e_request_latency_seconds_count": 1,
        "sluice_request_prompt_tokens_sum": usage["prompt_tokens"],
        "sluice_request_generation_tokens_sum": usage["completion_tokens"],
    }
    # Counters are published once per engine step and histograms when the request
    # ends, a moment after its response is written: poll briefly.
    deadline = time.monotonic() + 60  # generous: the machine may be loaded, or running ASan
    while True:
        after = {name: metric_total(tiny, name) - before[name] for name in names}
        length = metric_total_labelled(tiny, "sluice_request_success_total", "length") - length_before
        if (after == expected and length == 1) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert after == expected
    assert length == 1


def metric_total_labelled(daemon, name, reason):
    status, _, raw = request(daemon, "GET", "/metrics")
    assert status == 200
    return sum(value for (metric_name, labels), value in parse_metrics(raw.decode()).items()
               if metric_name == name and ("model_name", "tiny") in labels
               and ("finished_reason", reason) in labels)
