#!/usr/bin/env python3
"""A load generator for sluice's /v1/audio/speech (Python 3.11 standard library only).

It streams speech at a fixed concurrency: N connections, each sending its next
request as soon as the last one's audio has all arrived (closed loop). Every request
asks for `stream_format: "audio"` and `response_format: "pcm"` (16-bit little-endian
mono at 24 kHz, or at --sample-rate), so the audio length is read off the bytes
received without decoding anything. Loopback targets only, as loadgen.py.

  speechgen.py --url http://127.0.0.1:8080 --model MODEL --concurrency 4 --requests 32

Per request it measures the time to first audio (request sent -> first body byte)
and the real-time factor (audio seconds / request wall seconds); over the run, the
aggregate audio seconds per wall second. It prints a table and, with --json FILE,
writes the same as JSON. Exit status: 2 on bad arguments or a refused target, 1 when
no request succeeded, else 0.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

try:
    import loadgen
except ModuleNotFoundError:  # loaded by file path (the tests): find the sibling module
    sys.path.append(str(Path(__file__).resolve().parent))
    import loadgen

PCM_RATE = 24000  # OpenAI's pcm: 24 kHz s16le mono
BYTES_PER_SAMPLE = 2

# Used in turn when --input is not given: short, ordinary sentences of different lengths.
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please leave the package at the front door, next to the blue bench.",
    "Our meeting moved to Thursday afternoon at three o'clock.",
    "Rain is expected this evening, so take an umbrella when you go out.",
    "Thank you for calling. Your estimated wait time is about two minutes.",
]


def speech_body(args: argparse.Namespace, index: int) -> bytes:
    body: dict[str, Any] = {
        "model": args.model,
        "input": args.input if args.input is not None else SENTENCES[index % len(SENTENCES)],
        "response_format": "pcm",
        "stream_format": "audio",
    }
    if args.voice is not None:
        body["voice"] = args.voice
    if args.max_new_tokens is not None:
        body["max_new_tokens"] = args.max_new_tokens
    if args.seed is not None:
        body["seed"] = args.seed
    if args.sample_rate is not None:
        body["sample_rate"] = args.sample_rate
    if args.speed is not None:
        body["speed"] = args.speed
    if args.ignore_eos:
        body["ignore_eos"] = True
    return json.dumps(body).encode()


def on_chunk(result: loadgen.Result, data: bytes, now: float) -> None:
    if result.status == 200:
        result.extra["audio_bytes"] = result.extra.get("audio_bytes", 0) + len(data)


def summarize(results: list[loadgen.Result], elapsed: float, rate: int) -> dict[str, Any]:
    """The speech report: TTFA and RTF of the successful streams, counts of all."""
    ok = [r for r in results if r.error is None and r.status == 200]
    ttfa_ms = sorted((r.first_byte - r.start) * 1000 for r in ok if r.first_byte is not None)
    audio_s = [r.extra.get("audio_bytes", 0) / BYTES_PER_SAMPLE / rate for r in ok]
    rtf = sorted(a / r.latency for a, r in zip(audio_s, ok) if r.latency > 0)
    total_audio_s = sum(audio_s)
    return {
        "requests": len(results),
        "ok": len(ok),
        "failed": len(results) - len(ok),
        "status_counts": {str(k): v for k, v in sorted(
            Counter(r.status for r in results if r.error is None).items())},
        "errors": dict(Counter(r.error for r in results if r.error is not None)),
        "elapsed_s": round(elapsed, 6),
        "sample_rate": rate,
        "ttfa_ms": {"p50": loadgen.percentile(ttfa_ms, 50), "p99": loadgen.percentile(ttfa_ms, 99),
                    "max": ttfa_ms[-1] if ttfa_ms else 0.0},
        "rtf": {"p50": loadgen.percentile(rtf, 50), "min": rtf[0] if rtf else 0.0},
        "audio_s": round(total_audio_s, 6),
        "audio_s_per_s": round(total_audio_s / elapsed, 6) if elapsed > 0 else 0.0,
    }


def format_report(report: dict[str, Any]) -> str:
    ttfa, rtf = report["ttfa_ms"], report["rtf"]
    rows = [
        ("target", f"POST {report['target']}  (concurrency {report['concurrency']}, "
                   f"model {report['model']})"),
        ("requests", f"{report['requests']} in {report['elapsed_s']:.2f} s: "
                     f"{report['ok']} ok, {report['failed']} failed"),
        ("status", "  ".join(f"{k}: {v}" for k, v in report["status_counts"].items()) or "-"),
        ("errors", "  ".join(f"{k}: {v}" for k, v in report["errors"].items()) or "-"),
        ("TTFA ms", f"p50 {ttfa['p50']:.1f}  p99 {ttfa['p99']:.1f}  max {ttfa['max']:.1f}"),
        ("stream RTF", f"p50 {rtf['p50']:.2f}  min {rtf['min']:.2f}  (audio s / request s)"),
        ("audio", f"{report['audio_s']:.2f} s at {report['sample_rate']} Hz, "
                  f"{report['audio_s_per_s']:.2f} audio s per wall s (aggregate RTF)"),
    ]
    return "\n".join(f"{name:<12}{value}" for name, value in rows)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8080",
                   help="http://HOST:PORT on a loopback address (default http://127.0.0.1:8080)")
    p.add_argument("--model", required=True, help="a speech model that GET /v1/models lists")
    p.add_argument("--concurrency", type=loadgen.positive(int), default=1,
                   help="streams at once (default 1)")
    p.add_argument("--requests", type=loadgen.positive(int),
                   help="stop after this many (default 100, or unlimited with --duration)")
    p.add_argument("--duration", type=loadgen.positive(float),
                   help="stop starting requests after this many seconds")
    p.add_argument("--timeout", type=loadgen.positive(float), default=120.0,
                   help="per request, seconds (default 120)")
    p.add_argument("--input", help="text of every request (default: built-in sentences in turn)")
    p.add_argument("--voice", help="voice name (default: the model's)")
    p.add_argument("--max-new-tokens", type=loadgen.positive(int),
                   help="codec frames per request at most (80 ms each)")
    p.add_argument("--seed", type=int, help="sampling seed sent with every request")
    p.add_argument("--ignore-eos", action="store_true",
                   help="every request runs --max-new-tokens frames (sends \"ignore_eos\": true)")
    p.add_argument("--sample-rate", type=loadgen.positive(int),
                   help="ask for this output rate (default: the model's 24000)")
    p.add_argument("--speed", type=loadgen.positive(float), help="speech speed, 0.25..4")
    p.add_argument("--api-key", help="sent as 'Authorization: Bearer KEY'")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    return p.parse_args(argv)


def plan_from_args(args: argparse.Namespace) -> loadgen.Plan:
    target = loadgen.parse_target(args.url, "/v1/audio/speech")
    headers = [("Content-Type", "application/json")]
    if args.api_key:
        headers.append(("Authorization", f"Bearer {args.api_key}"))
    if args.requests is not None:
        num_requests = args.requests
    else:  # --duration alone means "for that long"
        num_requests = None if args.duration is not None else 100
    return loadgen.Plan(
        target=target,
        request=loadgen.Request("POST", target.path, headers, speech_body(args, 0)),
        concurrency=args.concurrency, num_requests=num_requests,
        duration=args.duration or float("inf"), timeout=args.timeout,
        on_chunk=on_chunk, body_for=lambda index: speech_body(args, index))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        plan = plan_from_args(args)
    except (loadgen.TargetError, ValueError, OSError) as exc:
        print(f"speechgen: {exc}", file=sys.stderr)
        return 2
    results, elapsed = asyncio.run(loadgen.run(plan))
    report = {
        "target": f"http://{plan.target.host_header}{plan.target.path}",
        "model": args.model,
        "concurrency": args.concurrency,
        **summarize(results, elapsed, args.sample_rate or PCM_RATE),
    }
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return 0 if report["ok"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
