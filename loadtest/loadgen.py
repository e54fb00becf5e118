#!/usr/bin/env python3
"""A small load generator for sluice (Python 3.11 standard library only).

It speaks raw HTTP/1.1 with keep-alive over asyncio streams, to loopback targets only
(127.0.0.0/8, ::1, localhost): anything else is refused before a byte is sent.

Two ways to offer load:
  --concurrency N   N connections, each sending its next request as soon as the last
                    one is answered (closed loop; the default, N=1).
  --rate R          requests start at Poisson arrivals of R per second whatever the
                    server does (open loop), over at most --max-connections
                    connections. Latency counts from the planned arrival, so time
                    spent waiting for a free connection is not hidden.

It stops after --requests (default 1000) or --duration seconds (default 60),
whichever comes first; --duration alone lifts the request count. In-flight requests
are then allowed to finish, each within --timeout.

  loadgen.py http://127.0.0.1:8080/health --concurrency 8 --requests 5000
  loadgen.py http://127.0.0.1:8080 --path /v1/chat/completions --method POST \\
      --body-file chat.json --header 'Authorization: Bearer KEY' --rate 20 --duration 30
  loadgen.py http://127.0.0.1:8080 --openai-completions MODEL --max-tokens 64 \\
      --concurrency 4 --requests 100

--openai-completions MODEL streams POST /v1/completions (openai_stream.py) and adds
time to first token, inter-token latency and output tokens/s to the report.

It prints requests/s, latency percentiles, status counts, errors and bytes, and with
--json FILE writes the same as JSON. It exits 2 on bad arguments or a refused
target, 1 when no request got a response, else 0.

Each response body passes through an optional hook (`Plan.on_chunk`) as it arrives;
streaming measures such as time to first token and inter-token latency plug in there
and keep their numbers in `Result.extra`.
"""
from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import random
import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

try:
    import openai_stream
except ModuleNotFoundError:  # loaded by file path (the tests): find the sibling module
    sys.path.append(str(Path(__file__).resolve().parent))
    import openai_stream


class TargetError(Exception):
    """The URL is not one loadgen may send to."""


@dataclass(frozen=True)
class Target:
    address: str  # a loopback IP, resolved once
    port: int
    host_header: str
    path: str


@dataclass
class Request:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes = b""

    def encode(self, host_header: str) -> bytes:
        lines = [f"{self.method} {self.path} HTTP/1.1", f"Host: {host_header}"]
        lines += [f"{k}: {v}" for k, v in self.headers]
        if self.body or self.method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(self.body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + self.body


@dataclass
class Result:
    start: float  # perf_counter() when the request was due
    status: int = 0  # 0: no response
    headers: dict[str, str] = field(default_factory=dict)  # names in lower case
    first_byte: float | None = None  # perf_counter() of the first body byte
    end: float = 0.0
    bytes_sent: int = 0
    bytes_received: int = 0
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # for hooks' own measures

    @property
    def latency(self) -> float:
        return self.end - self.start


# Called with each piece of a response body as it arrives, and the time it arrived.
OnChunk = Callable[[Result, bytes, float], None]


LOOPBACK_ONLY = "loadgen only targets 127.0.0.0/8, ::1 or localhost"


def is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def parse_target(url: str, path: str | None = None) -> Target:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme != "http" or not host:
        raise TargetError(f"{url}: expected http://HOST[:PORT][/PATH]")
    port = parts.port or 80
    if host == "localhost" or host.endswith(".localhost"):
        addresses = [info[4][0] for info in
                     socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]
    else:  # other names are refused unresolved: even a DNS query would leave the machine
        addresses = [host]
    for address in addresses:
        if not is_loopback(address):
            raise TargetError(f"{url}: {address} is not a loopback address; {LOOPBACK_ONLY}")
    if path is None:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(addresses[0], port, parts.netloc.rpartition("@")[2], path)


class Connection:
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, target: Target):
        self.target = target
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @property
    def is_open(self) -> bool:
        return self.writer is not None

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None

    async def exchange(self, payload: bytes, method: str, result: Result,
                       on_chunk: OnChunk | None) -> None:
        reused = self.is_open
        if not reused:
            self.reader, self.writer = await asyncio.open_connection(
                self.target.address, self.target.port)
        try:
            self.writer.write(payload)
            await self.writer.drain()
            status_line = await self.reader.readline()
        except ConnectionError:
            if not reused:
                raise
            status_line = b""
        if not status_line:
            self.close()
            if reused:  # the server had closed the idle connection: retry once, anew
                return await self.exchange(payload, method, result, on_chunk)
            raise ConnectionError("connection closed before a response")
        result.bytes_sent = len(payload)
        await self._read_response(status_line, method, result, on_chunk)

    async def _read_response(self, status_line: bytes, method: str, result: Result,
                             on_chunk: OnChunk | None) -> None:
        reader = self.reader
        version, _, rest = status_line.decode("latin-1").partition(" ")
        if not version.startswith("HTTP/") or not rest[:3].isdigit():
            raise ConnectionError(f"bad status line {status_line[:80]!r}")
        result.status = int(rest[:3])
        result.bytes_received += len(status_line)
        result.headers = headers = {}
        while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
            result.bytes_received += len(line)
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if result.status < 200:  # an interim response (100 Continue): the real one follows
            return await self._read_response(await reader.readline(), method, result, on_chunk)

        def got(data: bytes) -> None:
            now = time.perf_counter()
            if result.first_byte is None:
                result.first_byte = now
            result.bytes_received += len(data)
            if on_chunk is not None:
                on_chunk(result, data, now)

        until_eof = False
        if method == "HEAD" or result.status in (204, 304):
            pass
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            while (size := int((await reader.readline()).split(b";")[0], 16)) > 0:
                got(await reader.readexactly(size))
                await reader.readexactly(2)  # CRLF after each chunk
            while await reader.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
        elif "content-length" in headers:
            remaining = int(headers["content-length"])
            while remaining > 0:
                data = await reader.read(min(remaining, 1 << 16))
                if not data:
                    raise asyncio.IncompleteReadError(b"", remaining)
                got(data)
                remaining -= len(data)
        else:
            until_eof = True
            while data := await reader.read(1 << 16):
                got(data)
        conn_header = headers.get("connection", "").lower()
        keep_alive = ("keep-alive" in conn_header if version == "HTTP/1.0"
                      else "close" not in conn_header)
        if until_eof or not keep_alive:
            self.close()


class Pool:
    """At most `size` connections; idle ones are reused."""

    def __init__(self, target: Target, size: int):
        self.target = target
        self.idle: list[Connection] = []
        self.slots = asyncio.Semaphore(size)

    async def acquire(self) -> Connection:
        await self.slots.acquire()
        return self.idle.pop() if self.idle else Connection(self.target)

    def release(self, conn: Connection) -> None:
        if conn.is_open:
            self.idle.append(conn)
        self.slots.release()

    def close(self) -> None:
        for conn in self.idle:
            conn.close()


@dataclass
class Plan:
    target: Target
    request: Request
    concurrency: int = 1
    rate: float | None = None  # requests/s; None: closed loop at `concurrency`
    max_connections: int = 256
    num_requests: int | None = 1000
    duration: float = 60.0
    timeout: float = 30.0
    seed: int | None = None
    on_chunk: OnChunk | None = None
    # The body of the i-th request (from 0); None: every request sends request.body.
    body_for: Callable[[int], bytes] | None = None


async def run(plan: Plan) -> tuple[list[Result], float]:
    """Runs the plan; returns every result and the wall time it took."""
    def payload(index: int) -> bytes:
        request = plan.request
        if plan.body_for is not None:
            request = Request(request.method, request.path, request.headers,
                              plan.body_for(index))
        return request.encode(plan.target.host_header)

    pool = Pool(plan.target, plan.max_connections if plan.rate else plan.concurrency)
    start = time.perf_counter()
    deadline = start + plan.duration
    results: list[Result] = []
    num_started = 0

    def may_start() -> int | None:
        """The index of the request that may start now, or None when the run is over."""
        nonlocal num_started
        if plan.num_requests is not None and num_started >= plan.num_requests:
            return None
        if time.perf_counter() >= deadline:
            return None
        num_started += 1
        return num_started - 1

    async def one(due: float, index: int) -> None:
        result = Result(start=due)
        results.append(result)
        conn = await pool.acquire()
        if plan.rate is None:
            result.start = time.perf_counter()
        try:
            await asyncio.wait_for(
                conn.exchange(payload(index), plan.request.method, result, plan.on_chunk),
                plan.timeout)
        except Exception as exc:  # every failure is a measurement, not a crash
            result.error = "timeout" if isinstance(exc, TimeoutError) else type(exc).__name__
            conn.close()
        finally:
            result.end = time.perf_counter()
            pool.release(conn)

    if plan.rate is None:
        async def worker() -> None:
            while (index := may_start()) is not None:
                await one(time.perf_counter(), index)
        await asyncio.gather(*(worker() for _ in range(plan.concurrency)))
    else:
        rng = random.Random(plan.seed)
        tasks: set[asyncio.Task] = set()
        due = start
        while True:
            due += rng.expovariate(plan.rate)
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            if (index := may_start()) is None:
                break
            task = asyncio.create_task(one(due, index))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)
    pool.close()
    return results, time.perf_counter() - start


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * p // 100))  # ceil without floats drifting
    return sorted_values[int(rank) - 1]


def summarize(plan: Plan, results: list[Result], elapsed: float) -> dict[str, Any]:
    answered = sorted(r.latency * 1000 for r in results if r.error is None)
    t = plan.target
    return {
        "target": f"http://{t.host_header}{plan.request.path}",
        "method": plan.request.method,
        "mode": "rate" if plan.rate else "concurrency",
        "concurrency": None if plan.rate else plan.concurrency,
        "rate": plan.rate,
        "requests": len(results),
        "ok": sum(1 for r in results if r.error is None and 200 <= r.status < 300),
        "errors": dict(Counter(r.error for r in results if r.error is not None)),
        "status_counts": {str(k): v for k, v in sorted(
            Counter(r.status for r in results if r.error is None).items())},
        "elapsed_s": round(elapsed, 6),
        "requests_per_s": round(len(answered) / elapsed, 3) if elapsed > 0 else 0.0,
        "latency_ms": {
            "min": answered[0] if answered else 0.0,
            "mean": sum(answered) / len(answered) if answered else 0.0,
            "p50": percentile(answered, 50),
            "p90": percentile(answered, 90),
            "p99": percentile(answered, 99),
            "max": answered[-1] if answered else 0.0,
        },
        "bytes_sent": sum(r.bytes_sent for r in results),
        "bytes_received": sum(r.bytes_received for r in results),
    }


def format_report(report: dict[str, Any]) -> str:
    load = (f"rate {report['rate']:g}/s" if report["mode"] == "rate"
            else f"concurrency {report['concurrency']}")
    lat = report["latency_ms"]
    rows = [
        ("target", f"{report['method']} {report['target']}  ({load})"),
        ("requests", f"{report['requests']} in {report['elapsed_s']:.2f} s, "
                     f"{report['ok']} ok (2xx)"),
        ("throughput", f"{report['requests_per_s']:.1f} req/s answered"),
        ("latency ms", "  ".join(f"{k} {lat[k]:.2f}" for k in ("p50", "p90", "p99", "max"))
                       + f"  (mean {lat['mean']:.2f})"),
        ("status", "  ".join(f"{k}: {v}" for k, v in report["status_counts"].items()) or "-"),
        ("errors", "  ".join(f"{k}: {v}" for k, v in report["errors"].items()) or "-"),
        ("bytes", f"sent {report['bytes_sent']:,}  received {report['bytes_received']:,}"),
    ]
    if "stream" in report:
        rows += openai_stream.format_rows(report["stream"])
    return "\n".join(f"{name:<12}{value}" for name, value in rows)


def positive(kind: type) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text}: must be positive")
        return value
    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url", help="http://HOST:PORT[/PATH] on a loopback address")
    p.add_argument("--path", help="request path (default: the URL's, or /)")
    p.add_argument("--method", default="GET")
    body = p.add_mutually_exclusive_group()
    body.add_argument("--body", help="request body")
    body.add_argument("--body-file", help="file whose contents are the request body")
    p.add_argument("--header", action="append", default=[], metavar="'K: V'",
                   help="extra request header; repeatable")
    load = p.add_mutually_exclusive_group()
    load.add_argument("--concurrency", type=positive(int), default=1,
                      help="closed loop: connections (default 1)")
    load.add_argument("--rate", type=positive(float), help="open loop: Poisson arrivals/s")
    p.add_argument("--max-connections", type=positive(int), default=256,
                   help="connection cap in --rate mode (default 256)")
    p.add_argument("--requests", type=positive(int),
                   help="stop after this many (default 1000, or unlimited with --duration)")
    p.add_argument("--duration", type=positive(float),
                   help="stop after this many seconds (default 60)")
    p.add_argument("--timeout", type=positive(float), default=30.0,
                   help="per request, seconds (default 30)")
    p.add_argument("--seed", type=int,
                   help="seed of the Poisson arrivals and of --distinct-prompts")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    stream = p.add_argument_group("streaming completions")
    stream.add_argument("--openai-completions", metavar="MODEL",
                        help="stream POST /v1/completions for MODEL; report TTFT and ITL")
    stream.add_argument("--prompt", default=openai_stream.DEFAULT_PROMPT,
                        help="prompt text for --openai-completions")
    stream.add_argument("--max-tokens", type=positive(int), default=64,
                        help="max_tokens for --openai-completions (default 64)")
    stream.add_argument("--distinct-prompts", type=positive(int), metavar="WORDS",
                        help="every request its own prompt of about WORDS words "
                             "(no shared prefix to cache); replaces --prompt")
    stream.add_argument("--ignore-eos", action="store_true",
                        help="send ignore_eos: every stream runs to --max-tokens")
    stream.add_argument("--temperature", type=float, default=0.0,
                        help="sampling temperature of --openai-completions (default 0, greedy)")
    return p.parse_args(argv)


def plan_from_args(args: argparse.Namespace) -> Plan:
    headers = []
    for h in args.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise ValueError(f"--header {h!r}: expected 'Name: value'")
        headers.append((name.strip(), value.strip()))
    body = args.body.encode() if args.body is not None else b""
    if args.body_file:
        with open(args.body_file, "rb") as f:
            body = f.read()
    streaming = args.openai_completions is not None
    if streaming:
        if body:
            raise ValueError("--openai-completions builds its own body: drop --body/--body-file")
        body = openai_stream.completions_body(args.openai_completions, args.prompt,
                                              args.max_tokens, args.ignore_eos, args.temperature)
        args.method = "POST"
        if args.path is None and urlsplit(args.url).path in ("", "/"):
            args.path = "/v1/completions"
    if body and not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", "application/json"))
    elif args.distinct_prompts or args.ignore_eos:
        raise ValueError("--distinct-prompts and --ignore-eos need --openai-completions")
    body_for = None
    if streaming and args.distinct_prompts:
        def body_for(index: int) -> bytes:
            # --seed picks the set of prompts too, so runs with different seeds share none
            prompt = openai_stream.distinct_prompt((args.seed or 0) * 1_000_000 + index,
                                                   args.distinct_prompts)
            return openai_stream.completions_body(args.openai_completions, prompt,
                                                  args.max_tokens, args.ignore_eos, args.temperature)
    target = parse_target(args.url, args.path)
    if args.requests is not None:
        num_requests = args.requests
    else:  # --duration alone means "for that long"
        num_requests = None if args.duration is not None else 1000
    return Plan(
        target=target,
        request=Request(args.method.upper(), target.path, headers, body),
        concurrency=args.concurrency, rate=args.rate, max_connections=args.max_connections,
        num_requests=num_requests, duration=args.duration or 60.0,
        timeout=args.timeout, seed=args.seed,
        on_chunk=openai_stream.on_chunk if streaming else None, body_for=body_for)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        plan = plan_from_args(args)
    except (TargetError, ValueError, OSError) as exc:
        print(f"loadgen: {exc}", file=sys.stderr)
        return 2
    results, elapsed = asyncio.run(run(plan))
    report = summarize(plan, results, elapsed)
    if plan.on_chunk is openai_stream.on_chunk:
        report["stream"] = openai_stream.summarize(results, elapsed, percentile)
    print(format_report(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    return 0 if report["requests"] > sum(report["errors"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
