"""/health reports an engine whose step runs past health_step_timeout_s."""
import json
import re
import threading
import time

from http_util import request

NUM_PROMPTS = 64      # max_waiting_per_request (a quarter of max_waiting, 256) and max_num_seqs
PROMPT_TOKENS = 250   # + max_tokens 1 fills the tiny model's context of 256


def test_health_is_503_naming_the_model_while_a_step_runs_past_the_timeout(start_daemon):
    # A limit of a microsecond makes every step "too long" while it runs, so a busy
    # engine is wedged by this daemon's standard and an idle one is not. The tiny
    # model's decode steps take about a millisecond, short enough for every poll to
    # fall between them. So the step observed is one held for long: 64 prompts of 250
    # tokens and one token each make a request of a single step, a prefill of 16,000
    # tokens (max_num_batched_tokens is raised to take them at once), about a second on
    # a 2-core VM's CPU, hundreds of /health answers. From the moment it is submitted
    # until it answers, the engine is in that step but for the microseconds it takes to
    # admit the prompts and to publish their finish.
    daemon = start_daemon("--health-step-timeout-s", "0.000001", "--max-num-batched-tokens", "16384")
    assert request(daemon, "GET", "/health")[0] == 200

    # Distinct prompts: none is served from another's cached blocks.
    prompts = [[5 + i] * PROMPT_TOKENS for i in range(NUM_PROMPTS)]
    body = json.dumps({"model": "tiny", "prompt": prompts, "max_tokens": 1, "temperature": 0, "ignore_eos": True})
    done = threading.Event()
    result = {}

    def generate():
        result["status"], _, result["body"] = request(daemon, "POST", "/v1/completions", body=body,
                                                      headers={"Content-Type": "application/json"}, timeout=120)
        done.set()

    worker = threading.Thread(target=generate)
    worker.start()
    unhealthy = None
    num_polls = 0
    while unhealthy is None and not done.is_set():
        status, _, answer = request(daemon, "GET", "/health")
        num_polls += 1
        if status == 503:
            unhealthy = json.loads(answer)
    worker.join(timeout=120)
    assert result.get("status") == 200, result
    assert len(json.loads(result["body"])["choices"]) == NUM_PROMPTS
    # The engine's own account of the step: each prompt's time to its first token.
    finished = rf"finished \(length\): prompt {PROMPT_TOKENS} .* ttft ([\d.]+) ms"
    daemon.wait_for_log_count(finished, NUM_PROMPTS)  # logged just after the answer's last event
    ttfts = [float(ms) for ms in re.findall(finished, daemon.log)]
    assert unhealthy is not None, (f"no /health answer of {num_polls} saw the running step "
                                   f"(the prompts' time to first token: {min(ttfts)} to {max(ttfts)} ms)")
    assert unhealthy["status"] == "unhealthy"
    assert unhealthy["models"] == [{"id": "tiny", "status": "wedged", "reason": unhealthy["models"][0]["reason"]}]
    assert "a step has been running for" in unhealthy["models"][0]["reason"]
    assert "health_step_timeout_s" in unhealthy["models"][0]["reason"]
    assert "model tiny:" in unhealthy["error"]["message"]
    assert unhealthy["error"]["code"] == "engine_unhealthy"
    # Idle again (once the engine thread has closed the step that finished it): healthy.
    deadline = time.monotonic() + 60  # generous: the machine may be loaded, or running ASan
    while request(daemon, "GET", "/health")[0] != 200:
        assert time.monotonic() < deadline, "still unhealthy with nothing running"
        time.sleep(0.01)
