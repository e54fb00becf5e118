#!/usr/bin/env python3
"""Reliability run for sluice (Python 3.11 standard library only).

It starts `sluice serve` on 127.0.0.1 with an ephemeral port, then runs three phases
against it and prints what it saw:

  soak        --streams N streaming completions at a time for --duration seconds,
              each with its own prompt. Figures: streams completed, errors, the
              daemon's RSS sampled over time, and the KV cache once the load stops.
  storm       --storm M streams opened at once and dropped by the client after their
              first token. Figures: aborts counted by the daemon, KV cache after.
  sigterm     --streams N streams in flight (each past its first token), then SIGTERM.
              Figures: streams that still ran to their end, time to exit, exit status.

Checks (each failed one is printed and makes the exit status 1):
  - no stream error in the soak, at least one stream completed;
  - after each phase the engine is idle and sluice_kv_cache_usage_perc is back to 0
    (every KV block freed) within --settle-s;
  - RSS grew by at most --max-rss-growth-mib from the first sample after warm-up
    (a quarter of the soak) to the last;
  - the storm's abort count (sluice_request_success_total{finished_reason="abort"})
    went up by exactly M, and the daemon still answers afterwards;
  - under SIGTERM every stream in flight runs to its end (not "abort") with [DONE],
    the connections drain before the grace period ends, and the daemon exits 0.

  reliability.py --sluice build/server/sluice --model models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --streams 16 --duration 600 --storm 64 --json soak.json

Exit status: 0 all checks passed, 1 a check failed, 2 the daemon did not start.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from openai_stream import distinct_prompt  # noqa: E402  (same folder, not a package)

LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")
READY = re.compile(r"ready: \d+ model")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')


class Daemon:
    """One `sluice serve` this script started; its output is kept for error reports."""

    def __init__(self, binary: str, model: str, extra: list[str]):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        self.proc = subprocess.Popen(
            [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--model", model, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.lines: list[str] = []
        self.port = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            log = "\n".join(self.lines)
            if not self.port and (m := LISTENING.search(log)):
                self.port = int(m.group(1))
            if self.port and READY.search(log):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError("daemon did not become ready:\n" + "\n".join(self.lines[-30:]))

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


# --- HTTP on loopback ----------------------------------------------------------------

async def http_get(port: int, path: str, timeout: float = 10) -> tuple[int, bytes]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        raw = await asyncio.wait_for(reader.read(-1), timeout)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
    if b"transfer-encoding: chunked" in head.lower():
        body = dechunk(body)
    return status, body


def dechunk(data: bytes) -> bytes:
    out, pos = b"", 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return out
        size = int(data[pos:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return out
        out += data[end + 2:end + 2 + size]
        pos = end + 2 + size + 2


async def metrics(port: int) -> dict[str, float]:
    """The /metrics samples, keyed by name plus labels as written."""
    status, body = await http_get(port, "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    samples = {}
    for line in body.decode().splitlines():
        if m := SAMPLE.match(line):
            samples[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return samples


def metric_sum(samples: dict[str, float], name: str, label: str = "") -> float:
    return sum(v for k, v in samples.items() if k.split("{")[0] == name and label in k)


@dataclass
class StreamOutcome:
    done: bool = False       # data: [DONE] arrived
    tokens: int = 0          # content chunks seen
    finish_reason: str = ""  # the choice's, as the server sent it
    error: str = ""          # why it failed, empty when it did not


async def stream(port: int, model: str, prompt: str, max_tokens: int, timeout: float,
                 drop_after_first: bool = False, on_first=None) -> StreamOutcome:
    """One streaming completion. drop_after_first: reset the connection at the first
    token; on_first: called at the first token."""
    out = StreamOutcome()
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": max_tokens,
                       "temperature": 0, "ignore_eos": True, "stream": True}).encode()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    except (OSError, asyncio.TimeoutError) as e:
        out.error = f"connect: {type(e).__name__}"
        return out
    try:
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        if not head.startswith(b"HTTP/1.1 200"):
            out.error = "status " + head.split(b"\r\n")[0].decode(errors="replace")[9:]
            return out
        deadline = time.monotonic() + timeout
        while not out.done:
            line = await asyncio.wait_for(reader.readline(), max(0.1, deadline - time.monotonic()))
            if not line:
                out.error = "closed before [DONE]"
                return out
            if line.startswith(b"data: "):
                payload = line[6:].strip()
                if payload == b"[DONE]":
                    out.done = True
                    continue
                chunk = json.loads(payload)
                if "error" in chunk:
                    out.error = "error event"
                    return out
                for choice in chunk.get("choices", []):
                    out.finish_reason = choice.get("finish_reason") or out.finish_reason
                    if not choice.get("text"):
                        continue
                    out.tokens += 1
                    if out.tokens == 1 and on_first:
                        on_first()
                    if drop_after_first:
                        sock = writer.get_extra_info("socket")
                        # SO_LINGER 0: close() sends RST, as a client that dies would.
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                        return out
    except (OSError, ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        out.error = type(e).__name__
    finally:
        writer.close()
    return out


# --- phases --------------------------------------------------------------------------

@dataclass
class Report:
    figures: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        if not ok:
            self.failures.append(what)


async def settle(port: int, seconds: float) -> tuple[float, float]:
    """Waits for an idle engine with no KV block in use; returns (busy, kv usage) at the end."""
    deadline = time.monotonic() + seconds
    while True:
        m = await metrics(port)
        busy = metric_sum(m, "sluice_num_requests_running") + metric_sum(m, "sluice_num_requests_waiting")
        kv = metric_sum(m, "sluice_kv_cache_usage_perc")
        if (busy == 0 and kv == 0) or time.monotonic() > deadline:
            return busy, kv
        await asyncio.sleep(0.2)


async def soak(d: Daemon, args: argparse.Namespace, model: str, report: Report) -> None:
    stop_at = time.monotonic() + args.duration
    outcomes: list[StreamOutcome] = []
    rss: list[tuple[float, float]] = []
    counter = iter(range(1 << 30))

    async def worker() -> None:
        while time.monotonic() < stop_at:
            outcomes.append(await stream(d.port, model, distinct_prompt(next(counter), args.prompt_words),
                                         args.max_tokens, args.timeout))

    async def sampler() -> None:
        start = time.monotonic()
        every = max(1.0, args.duration / 20)
        while time.monotonic() < stop_at:
            rss.append((time.monotonic() - start, d.rss_mib()))
            await asyncio.sleep(every)
        rss.append((time.monotonic() - start, d.rss_mib()))

    await asyncio.gather(sampler(), *(worker() for _ in range(args.streams)))
    errors = [o.error for o in outcomes if o.error]
    busy, kv = await settle(d.port, args.settle_s)
    warm = next((mib for t, mib in rss if t >= args.duration / 4), rss[-1][1])
    growth = rss[-1][1] - warm
    report.figures["soak"] = {
        "streams": args.streams, "seconds": args.duration, "completed": len(outcomes) - len(errors),
        "tokens": sum(o.tokens for o in outcomes), "errors": len(errors),
        "error_kinds": sorted(set(errors)), "rss_mib": [[round(t), round(m, 1)] for t, m in rss],
        "rss_growth_after_warmup_mib": round(growth, 1), "kv_cache_usage_after": kv,
        "requests_busy_after": busy}
    report.check(not errors, f"soak: {len(errors)} stream errors {sorted(set(errors))}")
    report.check(len(outcomes) > len(errors), "soak: no stream completed")
    report.check(busy == 0 and kv == 0, f"soak: engine not idle after the load (busy {busy}, kv {kv})")
    report.check(growth <= args.max_rss_growth_mib,
                 f"soak: RSS grew {growth:.1f} MiB after warm-up (limit {args.max_rss_growth_mib})")


async def storm(d: Daemon, args: argparse.Namespace, model: str, report: Report) -> None:
    label = 'finished_reason="abort"'
    before = metric_sum(await metrics(d.port), "sluice_request_success_total", label)
    # Long streams, so every one is still running when its client goes away.
    outcomes = await asyncio.gather(*(
        stream(d.port, model, distinct_prompt(100_000 + i, args.prompt_words), args.long_max_tokens, args.timeout,
               drop_after_first=True) for i in range(args.storm)))
    dropped = sum(1 for o in outcomes if o.tokens and not o.error)
    deadline = time.monotonic() + args.settle_s
    while True:
        aborts = metric_sum(await metrics(d.port), "sluice_request_success_total", label) - before
        if aborts >= dropped or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.2)
    busy, kv = await settle(d.port, args.settle_s)
    after = await stream(d.port, model, "After the storm", 4, args.timeout)
    report.figures["storm"] = {
        "streams": args.storm, "dropped_after_first_token": dropped, "aborts_counted": aborts,
        "errors_before_drop": sorted({o.error for o in outcomes if o.error}),
        "kv_cache_usage_after": kv, "requests_busy_after": busy, "next_request_ok": after.done}
    report.check(dropped == args.storm, f"storm: only {dropped} of {args.storm} streams got a first token")
    report.check(aborts == dropped, f"storm: {aborts:.0f} aborts counted for {dropped} disconnects")
    report.check(busy == 0 and kv == 0, f"storm: engine not idle after the storm (busy {busy}, kv {kv})")
    report.check(after.done, f"storm: the next request failed ({after.error})")


async def sigterm(d: Daemon, args: argparse.Namespace, model: str, report: Report) -> None:
    # The signal comes once every stream has its first token, so all are in flight.
    started = 0
    all_started = asyncio.Event()

    def on_first() -> None:
        nonlocal started
        started += 1
        if started == args.streams:
            all_started.set()

    tasks = [asyncio.create_task(stream(d.port, model, distinct_prompt(200_000 + i, args.prompt_words),
                                        args.sigterm_max_tokens, args.timeout, on_first=on_first))
             for i in range(args.streams)]
    try:
        await asyncio.wait_for(all_started.wait(), args.timeout)
    except asyncio.TimeoutError:
        pass
    in_flight = sum(1 for t in tasks if not t.done())
    sent = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    outcomes = await asyncio.gather(*tasks)
    code = await asyncio.to_thread(d.proc.wait, args.grace_s + 10)
    exit_s = time.monotonic() - sent
    # Drained: the stream ran to its own end, not cut ("abort") at the end of the grace.
    unfinished = [o.error or o.finish_reason for o in outcomes if not o.done or o.finish_reason == "abort"]
    drained = any("all connections drained" in line for line in d.lines)
    report.figures["sigterm"] = {
        "streams": args.streams, "in_flight_at_signal": in_flight,
        "finished": sum(o.done and o.finish_reason != "abort" for o in outcomes), "cut": len(unfinished),
        "cut_kinds": sorted(set(unfinished)), "drained": drained, "exit_status": code,
        "exit_s": round(exit_s, 2)}
    report.check(in_flight == args.streams,
                 f"sigterm: {in_flight} of {args.streams} streams in flight at the signal (raise --sigterm-max-tokens)")
    report.check(not unfinished, f"sigterm: {len(unfinished)} streams cut {sorted(set(unfinished))}")
    report.check(code == 0, f"sigterm: exit status {code}")
    report.check(drained, "sigterm: the connections did not drain before the grace period ended")


async def served_model(port: int) -> str:
    status, body = await http_get(port, "/v1/models")
    return json.loads(body)["data"][0]["id"] if status == 200 else ""


def format_report(report: Report) -> str:
    lines = []
    for phase, figures in report.figures.items():
        lines.append(f"{phase}:")
        lines += [f"  {k}: {v}" for k, v in figures.items()]
    lines.append("result: " + ("ok" if not report.failures else "FAILED"))
    lines += [f"  FAILED {f}" for f in report.failures]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sluice", default="build/server/sluice", help="the daemon binary")
    p.add_argument("--model", required=True, help="model file (GGUF)")
    p.add_argument("--serve-arg", action="append", default=[], help="extra `sluice serve` argument")
    p.add_argument("--streams", type=int, default=8, help="concurrent streams (soak, sigterm)")
    p.add_argument("--duration", type=float, default=60, help="soak seconds")
    p.add_argument("--max-tokens", type=int, default=32, help="tokens per soak stream")
    p.add_argument("--prompt-words", type=int, default=40, help="words of each distinct prompt")
    p.add_argument("--storm", type=int, default=32, help="streams in the disconnect storm")
    p.add_argument("--long-max-tokens", type=int, default=256,
                   help="tokens of a storm stream: it must still run when dropped")
    p.add_argument("--sigterm-max-tokens", type=int, default=64,
                   help="tokens of a SIGTERM stream: it must finish within the grace period")
    p.add_argument("--grace-s", type=float, default=30, help="the daemon's --shutdown-grace-s")
    p.add_argument("--timeout", type=float, default=60, help="seconds per stream")
    p.add_argument("--settle-s", type=float, default=15, help="how long KV and aborts may take to settle")
    p.add_argument("--max-rss-growth-mib", type=float, default=64)
    p.add_argument("--ready-timeout", type=float, default=120, help="seconds to load the model")
    p.add_argument("--json", help="also write the figures here")
    return p.parse_args(argv)


async def run(args: argparse.Namespace) -> Report:
    report = Report()
    extra = [*args.serve_arg, "--shutdown-grace-s", str(args.grace_s)]
    d = Daemon(args.sluice, args.model, extra)
    try:
        try:
            await asyncio.to_thread(d.wait_ready, args.ready_timeout)
        except RuntimeError as e:
            report.figures["start"] = {"error": str(e)}
            report.failures.append("start")
            return report
        model = await served_model(d.port)
        report.figures["start"] = {"model": model, "rss_mib": round(d.rss_mib(), 1)}
        await soak(d, args, model, report)
        await storm(d, args, model, report)
        await sigterm(d, args, model, report)
    finally:
        d.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    report = asyncio.run(run(args))
    print(format_report(report), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"figures": report.figures, "failures": report.failures}, indent=1))
    if "start" in report.failures:
        return 2
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
