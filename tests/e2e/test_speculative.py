"""Speculative decoding (prompt lookup) on the default model, SmolLM2-135M Q4_1, through
the official openai client: greedy text with speculation is the text without it, the
drafts do get accepted (vllm:spec_decode_* metrics), and a bad config is refused."""
import json

import openai
import pytest

from conftest import TINY_MODEL, Daemon
from http_util import request
from speculative_util import serve_speculative, spec_counters

# Tasks that repeat their input (where prompt lookup finds drafts) and plain chat.
PROMPTS = [
    "Repeat this text exactly: The quick brown fox jumps over the lazy dog. The quick brown fox jumps over "
    "the lazy dog again.",
    "Rewrite this Python code with the variable total_count renamed to count:\n"
    "def add(items):\n    total_count = 0\n    for item in items:\n        total_count += item\n"
    "    return total_count\n",
    "List the days of the week, one per line.",
    "What is the capital of France?",
    "Write a short poem about the sea.",
]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    daemon = serve_speculative(tmp_path_factory, {"method": "ngram", "num_speculative_tokens": 4,
                                                  "prompt_lookup_min": 2, "prompt_lookup_max": 4})
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=300)


def chat(client, prompt, speculative, stream=False, **extra):
    return client.chat.completions.create(
        model="smol", messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=96,
        stream=stream, extra_body={"speculative": speculative, **extra})


def test_greedy_text_is_the_same_with_and_without_speculation(served, client):
    before = spec_counters(served)
    for prompt in PROMPTS:
        plain = chat(client, prompt, speculative=False)
        speculated = chat(client, prompt, speculative=True)
        assert speculated.choices[0].message.content == plain.choices[0].message.content, prompt
        assert speculated.choices[0].finish_reason == plain.choices[0].finish_reason
        assert speculated.usage.completion_tokens == plain.usage.completion_tokens
    after = spec_counters(served)
    assert after["num_drafts"] > before["num_drafts"]
    assert after["num_accepted_tokens"] > before["num_accepted_tokens"]
    assert after["num_accepted_tokens"] <= after["num_draft_tokens"]
    text = request(served, "GET", "/metrics")[2].decode()
    assert 'sluice_spec_decode_num_accepted_tokens_total{model_name="smol"}' in text
    assert 'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="smol",position="0"}' in text


def test_streamed_logprobs_stop_and_max_tokens_match(served, client):
    prompt = PROMPTS[0]
    def streamed(speculative, **extra):
        chunks = list(client.chat.completions.create(
            model="smol", messages=[{"role": "user", "content": prompt}], temperature=0, max_tokens=40,
            stream=True, logprobs=True, top_logprobs=2, extra_body={"speculative": speculative, **extra}))
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        logprobs = [(t.token, t.logprob) for c in chunks if c.choices and c.choices[0].logprobs
                    for t in c.choices[0].logprobs.content]
        reason = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        return text, logprobs, reason
    assert streamed(True) == streamed(False)
    plain = streamed(False)[0]
    stop = plain[len(plain) // 2:len(plain) // 2 + 4]
    assert streamed(True, stop=[stop]) == streamed(False, stop=[stop])
    for max_tokens in (1, 3, 7):
        a = chat(client, prompt, speculative=True, max_tokens=max_tokens)
        b = chat(client, prompt, speculative=False, max_tokens=max_tokens)
        assert a.usage.completion_tokens == b.usage.completion_tokens <= max_tokens
        assert a.choices[0].message.content == b.choices[0].message.content


def test_seeded_sampling_and_n_are_the_same(served, client):
    def sampled(speculative):
        r = client.chat.completions.create(
            model="smol", messages=[{"role": "user", "content": PROMPTS[1]}], temperature=0.8, seed=7, n=2,
            max_tokens=48, extra_body={"speculative": speculative})
        return [c.message.content for c in r.choices]
    assert sampled(True) == sampled(False)


def test_speculative_must_be_a_boolean(served):
    body = {"model": "smol", "prompt": "hi", "max_tokens": 2, "speculative": "yes"}
    status, _, raw = request(served, "POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    assert status == 400
    assert json.loads(raw)["error"]["param"] == "speculative"


@pytest.mark.parametrize("speculative,message", [
    ({"method": "eagle"}, "models[0].speculative.method: must be one of none, ngram"),
    ({"method": "ngram", "num_speculative_tokens": 0}, "models[0].speculative.num_speculative_tokens: must be between"),
    ({"method": "ngram", "prompt_lookup_min": 5, "prompt_lookup_max": 3},
     "models[0].speculative.prompt_lookup_min: must be at most prompt_lookup_max"),
    ({"method": "ngram", "k": 3}, "models[0].speculative.k: unknown key"),
])
def test_bad_speculative_config_is_refused(tmp_path, speculative, message):
    path = tmp_path / "sluice.json"
    path.write_text(json.dumps({"models": [{"path": str(TINY_MODEL), "speculative": speculative}]}))
    daemon = Daemon(["--config", str(path), "--port", "0"])
    assert daemon.wait_exit(timeout=30) != 0
    assert message in daemon.log
