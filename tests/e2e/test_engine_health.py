"""/health reports an engine whose step runs past health_step_timeout_s."""
import json
import threading
import time

from http_util import request


def test_health_is_503_naming_the_model_while_a_step_runs_past_the_timeout(start_daemon):
    # A limit of a microsecond makes every step "too long" while it runs, so a busy
    # engine is wedged by this daemon's standard and an idle one is not.
    daemon = start_daemon("--health-step-timeout-s", "0.000001")
    assert request(daemon, "GET", "/health")[0] == 200

    body = json.dumps({"model": "tiny", "prompt": "hello " * 20, "max_tokens": 150, "temperature": 0,
                       "ignore_eos": True})

    def poll_during_one_generation():
        """The first 503 /health answer while a completion runs, or None; and the completion's status."""
        done = threading.Event()
        result = {}

        def generate():
            result["status"], _, result["body"] = request(daemon, "POST", "/v1/completions", body=body,
                                                          headers={"Content-Type": "application/json"}, timeout=60)
            done.set()

        worker = threading.Thread(target=generate)
        worker.start()
        seen = None
        deadline = time.monotonic() + 30
        while seen is None and not done.is_set() and time.monotonic() < deadline:
            status, _, answer = request(daemon, "GET", "/health")
            if status == 503:
                seen = json.loads(answer)
            time.sleep(0.002)
        worker.join(timeout=60)
        assert result.get("status") == 200, result
        return seen

    # The tiny model's steps take about a millisecond: on a loaded machine the poller
    # can miss all of one generation's steps, so it gets a few generations.
    unhealthy = None
    for _ in range(5):
        unhealthy = poll_during_one_generation()
        if unhealthy is not None:
            break
    assert unhealthy is not None, "no /health answer saw the running step"
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
