#!/usr/bin/env python3
"""A throughput meter for sluice's /v1/embeddings (Python 3.11 standard library only).

For each batch size B given (--batch 1,16,64 by default) it sends --inputs texts in
requests of B inputs each (the last one smaller when B does not divide it), closed
loop at --concurrency connections, and reports inputs/s and tokens/s (the server's
`usage.prompt_tokens`) over the wall time of that phase, with request latency. Every
input is its own text of about --words words (openai_stream.distinct_prompt), so no two
share more than a token or two. Loopback targets only, as loadgen.py.

  embedgen.py --url http://127.0.0.1:8080 --model MODEL --batch 1,16,64 --inputs 256

A response counts as ok when it is a 200 whose `data` has one vector per input sent.
It prints the machine (CPU model, cores, load average before and after) and a table,
and with --json FILE writes the same as JSON. Exit status: 2 on bad arguments or a
refused target, 1 when some phase had no successful request, else 0.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
from collections import Counter
from pathlib import Path
from typing import Any

try:
    import loadgen
    import openai_stream
except ModuleNotFoundError:  # loaded by file path (the tests): find the sibling modules
    sys.path.append(str(Path(__file__).resolve().parent))
    import loadgen
    import openai_stream


def batch_sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text}: expected sizes like 1,16,64") from None
    if not sizes or any(size <= 0 for size in sizes):
        raise argparse.ArgumentTypeError(f"{text}: every batch size must be positive")
    return sizes


def machine() -> dict[str, Any]:
    """What the numbers were measured on: they mean little without it."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            names = [line.split(":", 1)[1].strip() for line in f if line.startswith("model name")]
        if names:
            cpu = names[0]
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "system": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def embeddings_body(args: argparse.Namespace, first: int, count: int) -> bytes:
    texts = [openai_stream.distinct_prompt((args.seed or 0) * 1_000_000 + first + i, args.words)
             for i in range(count)]
    return json.dumps({"model": args.model, "input": texts,
                       "encoding_format": args.encoding_format}).encode()


def on_chunk(result: loadgen.Result, data: bytes, now: float) -> None:
    result.extra.setdefault("body", bytearray()).extend(data)


def read_response(result: loadgen.Result, expected: int) -> tuple[int, int] | None:
    """(inputs, prompt tokens) of a successful response, else None."""
    if result.error is not None or result.status != 200:
        return None
    try:
        body = json.loads(bytes(result.extra.get("body", b"")))
        vectors = len(body["data"])
        tokens = int(body["usage"]["prompt_tokens"])
    except (ValueError, KeyError, TypeError):
        return None
    return (vectors, tokens) if vectors == expected else None


def summarize_phase(batch: int, sizes: list[int], results: list[loadgen.Result],
                    elapsed: float) -> dict[str, Any]:
    read = [read_response(r, sizes[i]) for i, r in enumerate(results)]
    ok = [(r, got) for r, got in zip(results, read) if got is not None]
    inputs = sum(got[0] for _, got in ok)
    tokens = sum(got[1] for _, got in ok)
    latency_ms = sorted(r.latency * 1000 for r, _ in ok)
    return {
        "batch": batch,
        "requests": len(results),
        "ok": len(ok),
        "failed": len(results) - len(ok),
        "status_counts": {str(k): v for k, v in sorted(
            Counter(r.status for r in results if r.error is None).items())},
        "errors": dict(Counter(r.error for r in results if r.error is not None)),
        "elapsed_s": round(elapsed, 6),
        "inputs": inputs,
        "tokens": tokens,
        "inputs_per_s": round(inputs / elapsed, 3) if elapsed > 0 else 0.0,
        "tokens_per_s": round(tokens / elapsed, 3) if elapsed > 0 else 0.0,
        "latency_ms": {"p50": loadgen.percentile(latency_ms, 50), "p99": loadgen.percentile(latency_ms, 99)},
    }


def format_report(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"target      POST {report['target']}  (model {report['model']}, concurrency "
        f"{report['concurrency']}, ~{report['words']} words per input, {report['encoding_format']})",
        f"machine     {m['cpu']}, {m['cores']} cores, {m['system']}",
        f"load avg    before {report['load_before']}  after {report['load_after']}",
        f"{'batch':>6} {'requests':>9} {'ok':>5} {'inputs':>7} {'tokens':>8} {'seconds':>8} "
        f"{'inputs/s':>9} {'tokens/s':>9} {'p50 ms':>8} {'p99 ms':>8}",
    ]
    for p in report["phases"]:
        lines.append(f"{p['batch']:>6} {p['requests']:>9} {p['ok']:>5} {p['inputs']:>7} {p['tokens']:>8} "
                     f"{p['elapsed_s']:>8.2f} {p['inputs_per_s']:>9.1f} {p['tokens_per_s']:>9.1f} "
                     f"{p['latency_ms']['p50']:>8.1f} {p['latency_ms']['p99']:>8.1f}")
        problems = {**p["status_counts"], **p["errors"]}
        if p["failed"]:
            lines.append(f"{'':>6} {p['failed']} failed: "
                         + "  ".join(f"{k}: {v}" for k, v in problems.items()))
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default="http://127.0.0.1:8080",
                   help="http://HOST:PORT on a loopback address (default http://127.0.0.1:8080)")
    p.add_argument("--model", required=True, help="a text model that GET /v1/models lists")
    p.add_argument("--batch", type=batch_sizes, default=[1, 16, 64],
                   help="inputs per request, one phase each (default 1,16,64)")
    p.add_argument("--inputs", type=loadgen.positive(int), default=256,
                   help="inputs embedded in each phase (default 256)")
    p.add_argument("--words", type=loadgen.positive(int), default=30,
                   help="about this many words per input (default 30)")
    p.add_argument("--concurrency", type=loadgen.positive(int), default=1,
                   help="requests at once (default 1)")
    p.add_argument("--encoding-format", choices=("float", "base64"), default="base64",
                   help="what the server sends back (default base64, as the openai client asks)")
    p.add_argument("--seed", type=int, help="picks the set of texts (default 0)")
    p.add_argument("--timeout", type=loadgen.positive(float), default=300.0,
                   help="per request, seconds (default 300)")
    p.add_argument("--api-key", help="sent as 'Authorization: Bearer KEY'")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    return p.parse_args(argv)


def phase_plan(args: argparse.Namespace, target: loadgen.Target, batch: int) -> tuple[loadgen.Plan, list[int]]:
    """The plan of one phase and the number of inputs each of its requests carries."""
    sizes = [min(batch, args.inputs - first) for first in range(0, args.inputs, batch)]
    headers = [("Content-Type", "application/json")]
    if args.api_key:
        headers.append(("Authorization", f"Bearer {args.api_key}"))

    def body_for(index: int) -> bytes:
        return embeddings_body(args, index * batch, sizes[index])

    plan = loadgen.Plan(target=target, request=loadgen.Request("POST", target.path, headers, body_for(0)),
                        concurrency=args.concurrency, num_requests=len(sizes), duration=float("inf"),
                        timeout=args.timeout, on_chunk=on_chunk, body_for=body_for)
    return plan, sizes


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        target = loadgen.parse_target(args.url, "/v1/embeddings")
    except (loadgen.TargetError, ValueError, OSError) as exc:
        print(f"embedgen: {exc}", file=sys.stderr)
        return 2
    load_before = load_average()
    phases = []
    for batch in args.batch:
        plan, sizes = phase_plan(args, target, batch)
        results, elapsed = asyncio.run(loadgen.run(plan))
        # loadgen appends results as requests start; the i-th started sent body_for(i).
        phases.append(summarize_phase(batch, sizes, results, elapsed))
    report = {
        "target": f"http://{target.host_header}{target.path}",
        "model": args.model,
        "concurrency": args.concurrency,
        "words": args.words,
        "encoding_format": args.encoding_format,
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
        "phases": phases,
    }
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return 0 if all(p["ok"] > 0 for p in phases) else 1


if __name__ == "__main__":
    sys.exit(main())
