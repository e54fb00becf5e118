"""Tokenizing and chat templates run on their own threads (tokenizer_threads), never on
an I/O thread: a flood of long texts must not hold up /health or /metrics. And a text
that cannot fit the context is refused from its bytes alone, before any tokenizing,
on /tokenize as on the generation routes, runs of spaces included."""
import json
import threading
import time

from conftest import DEFAULT_MODEL, require_model
from http_util import assert_openai_error, parse_metrics, request

SMOL = "SmolLM2-135M-Instruct.Q4_1"


def post(daemon, path, body, timeout=120):
    return request(daemon, "POST", path, body=json.dumps(body),
                   headers={"Content-Type": "application/json"}, timeout=timeout)


def long_words(num_bytes, seed):
    """Text of ordinary words (no long runs of spaces): passes the byte pre-check of an
    8192-token context at ~500 KB, but is far too long once tokenized."""
    words = ["alpha", "beta", "gamma", "delta", "kappa", "omega", "sigma", "zeta"]
    out, size, i = [], 0, seed
    while size < num_bytes:
        out.append(words[i % len(words)] + str(i % 97) + " ")
        size += len(out[-1])
        i = i * 1103515245 + 12345 & 0x7FFFFFFF
    return "".join(out)


def tokenizer_jobs(daemon):
    _, _, raw = request(daemon, "GET", "/metrics", timeout=30)
    return parse_metrics(raw.decode()).get(("sluice_tokenizer_jobs", frozenset()))


def test_health_answers_while_one_io_thread_serves_a_tokenizing_flood(start_daemon):
    require_model(DEFAULT_MODEL)
    # One I/O thread: before tokenizing moved off it, any request being tokenized
    # held every other request of the daemon, /health and /metrics included.
    daemon = start_daemon("--http-threads", "1", "--tokenizer-threads", "1", model=DEFAULT_MODEL)
    prompts = [long_words(480_000, seed) for seed in range(15)]  # ~7 MB: seconds of tokenizing
    results = []

    def flood():
        results.append(post(daemon, "/v1/completions", {"model": SMOL, "prompt": prompts, "max_tokens": 1}))

    threads = [threading.Thread(target=flood) for _ in range(2)]
    for thread in threads:
        thread.start()
    # /metrics answers while the pool works: the gauge shows a job in hand.
    deadline = time.monotonic() + 60
    while (tokenizer_jobs(daemon) or 0) < 1:
        assert time.monotonic() < deadline, "no tokenizer job seen on /metrics"
        assert not results, f"a flood request ended before its tokenizing was seen: {results}"
        time.sleep(0.02)
    status, _, body = request(daemon, "GET", "/health", timeout=30)
    assert status == 200, body
    # /health answered while the flood was still being tokenized.
    assert len(results) < 2
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == 2
    for status, _, raw in results:
        assert status == 400, raw
        assert_openai_error(raw, param="prompt", code="context_length_exceeded")
    assert tokenizer_jobs(daemon) == 0


def test_tokenize_refuses_a_text_that_cannot_fit_before_tokenizing(tiny):
    status, _, raw = post(tiny, "/tokenize", {"prompt": "word " * 400_000})  # 2 MB
    assert status == 400
    error = assert_openai_error(raw, param="prompt", code="context_length_exceeded")
    assert "bytes long, at least" in error["message"], error  # from the bytes, not the tokens
    ok = json.loads(post(tiny, "/tokenize", {"prompt": "word " * 20})[2])
    assert ok["count"] == len(ok["tokens"]) > 0


def test_runs_of_spaces_are_refused_from_their_bytes(smol):
    # 530 KB of spaces passed the old pre-check (bytes / longest piece) against the
    # 8192-token context and then cost seconds of tokenizing before the same 400.
    for path, body in [("/v1/completions", {"model": SMOL, "prompt": " " * 530_000, "max_tokens": 1}),
                       ("/tokenize", {"model": SMOL, "prompt": " " * 530_000})]:
        status, _, raw = post(smol, path, body)
        assert status == 400, raw
        error = assert_openai_error(raw, param="prompt", code="context_length_exceeded")
        assert "bytes long, at least" in error["message"], error
