"""Streaming OpenAI completions for loadgen.py: the request body, a server-sent-events
parser that runs as `Plan.on_chunk`, and the token-level report.

Per request it keeps, in `Result.extra["stream"]`, the arrival time of every content
chunk (a chunk whose choices carry text), the usage the server reported, whether
`data: [DONE]` arrived, and any error event. From those:

- TTFT: from the request being sent (closed loop) or due (open loop) to the first
  content chunk;
- inter-token latency: the gaps between consecutive content chunks. A chunk may
  carry several tokens; when `usage.completion_tokens` says there are more tokens
  than chunks, the tokens are spread evenly over the chunks and a gap before a chunk
  of k tokens counts as k latencies of gap/k (the extra tokens of the first chunk
  arrive with it, inside TTFT);
- output tokens: `usage.completion_tokens`, or the number of content chunks when the
  server sent no usage.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

DEFAULT_PROMPT = "Write a short story about a lighthouse keeper."

# Words for distinct prompts: common English, so that a word is about 1.2 tokens in
# the usual BPE and SentencePiece vocabularies.
_WORDS = ("river stone garden window morning letter music silver forest market bridge "
          "winter candle harbor mountain village teacher story circle orange quiet "
          "yellow travel kitchen summer animal number paper little simple across "
          "between money family friend water light house people school country").split()


def distinct_prompt(index: int, num_words: int) -> str:
    """Request `index`'s own prompt: a numbered line, then pseudo-random words.

    The number comes first so that no two prompts share a cacheable prefix beyond the
    first token or two; the same index always gives the same prompt (repeatable runs).
    """
    rng = random.Random(index)
    words = " ".join(rng.choice(_WORDS) for _ in range(num_words))
    return f"Request {index}. Continue this text: {words}"


def completions_body(model: str, prompt: str, max_tokens: int,
                     ignore_eos: bool = False, temperature: float = 0.0) -> bytes:
    body = {
        "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": temperature,
        "stream": True, "stream_options": {"include_usage": True},
    }
    if ignore_eos:  # a vLLM and llama-server extension: every stream runs to max_tokens
        body["ignore_eos"] = True
    return json.dumps(body).encode()


@dataclass
class StreamState:
    buffer: bytes = b""
    content_times: list[float] = field(default_factory=list)  # perf_counter() per content chunk
    completion_tokens: int | None = None  # from the usage chunk
    done: bool = False  # data: [DONE] seen
    error: str | None = None  # the first error event's message, or a parse failure


def on_chunk(result: Any, data: bytes, now: float) -> None:
    """Plan.on_chunk: feeds a piece of a response body to its request's SSE parser."""
    state = result.extra.setdefault("stream", StreamState())
    state.buffer += data.replace(b"\r\n", b"\n")
    while (end := state.buffer.find(b"\n\n")) >= 0:
        event, state.buffer = state.buffer[:end], state.buffer[end + 2:]
        payload = "\n".join(line[5:].removeprefix(" ") for line in
                            event.decode("utf-8", "replace").split("\n")
                            if line.startswith("data:"))
        if payload:
            _on_event(state, payload, now)


def _on_event(state: StreamState, payload: str, now: float) -> None:
    if payload == "[DONE]":
        state.done = True
        return
    try:
        event = json.loads(payload)
    except ValueError:
        state.error = state.error or "malformed event"
        return
    if "error" in event:
        error = event["error"]
        state.error = state.error or (error.get("message") if isinstance(error, dict)
                                      else str(error)) or "error event"
        return
    if any(choice.get("text") or (choice.get("delta") or {}).get("content")
           for choice in event.get("choices") or []):
        state.content_times.append(now)
    if isinstance(event.get("usage"), dict):
        state.completion_tokens = event["usage"].get("completion_tokens")


def classify(result: Any) -> str | None:
    """Why this request does not count as a complete stream (None: it does)."""
    if result.error is not None:
        return result.error
    if result.status != 200:
        return f"http {result.status}"
    state: StreamState | None = result.extra.get("stream")
    if state is None or not (state.content_times or state.done):
        return "empty stream"
    if state.error is not None:
        return "error event"
    if not state.done:
        return "no [DONE]"
    return None


def inter_token_latencies(state: StreamState) -> list[float]:
    times = state.content_times
    num_chunks = len(times)
    num_tokens = state.completion_tokens or num_chunks
    if num_chunks < 2:
        return []
    per_chunk, extra = divmod(max(num_tokens, num_chunks), num_chunks)
    latencies = []
    for i in range(1, num_chunks):
        k = per_chunk + (1 if i < extra else 0)
        latencies += [(times[i] - times[i - 1]) / k] * k
    return latencies


def summarize(results: list[Any], elapsed: float,
              percentile: Callable[[list[float], float], float]) -> dict[str, Any]:
    """The token-level report of a run; latencies in milliseconds."""
    ttft, itl = [], []
    num_tokens = num_complete = 0
    errors: Counter[str] = Counter()
    for result in results:
        state: StreamState | None = result.extra.get("stream")
        if state is not None and state.content_times:
            ttft.append((state.content_times[0] - result.start) * 1000)
            itl += [s * 1000 for s in inter_token_latencies(state)]
            num_tokens += state.completion_tokens or len(state.content_times)
        if (why := classify(result)) is None:
            num_complete += 1
        else:
            errors[why] += 1

    def stats(values: list[float]) -> dict[str, float]:
        values.sort()
        return {"mean": sum(values) / len(values) if values else 0.0,
                **{f"p{p}": percentile(values, p) for p in (50, 90, 99)},
                "max": values[-1] if values else 0.0, "samples": len(values)}

    return {
        "complete": num_complete,
        "errors": dict(errors),
        "output_tokens": num_tokens,
        "output_tokens_per_s": round(num_tokens / elapsed, 3) if elapsed > 0 else 0.0,
        "requests_per_s": round(num_complete / elapsed, 3) if elapsed > 0 else 0.0,
        "ttft_ms": stats(ttft),
        "itl_ms": stats(itl),
    }


def format_rows(stream: dict[str, Any]) -> list[tuple[str, str]]:
    def line(s: dict[str, float]) -> str:
        return ("  ".join(f"{k} {s[k]:.2f}" for k in ("p50", "p90", "p99", "max"))
                + f"  (mean {s['mean']:.2f}, n {s['samples']})")
    return [
        ("streams", f"{stream['complete']} complete, {stream['requests_per_s']:.2f} req/s"),
        ("tokens", f"{stream['output_tokens']} out, {stream['output_tokens_per_s']:.1f} tok/s"),
        ("ttft ms", line(stream["ttft_ms"])),
        ("itl ms", line(stream["itl_ms"])),
        ("stream err", "  ".join(f"{k}: {v}" for k, v in stream["errors"].items()) or "-"),
    ]
