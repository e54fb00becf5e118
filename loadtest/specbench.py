#!/usr/bin/env python3
"""Speculative decoding, on against off, side by side on one running daemon.

The daemon's model must have speculation configured (a model entry with
"speculative": {"method": "ngram", ...}); "off" sends the per-request opt-out
("speculative": false), so both modes run on the same process, alternating, and
compare like with like. Streams chat completions (greedy, ignore_eos off) and prints,
per task and number of concurrent streams:

  decode tok/s per stream  (completion tokens - 1) / (last chunk - first chunk), mean
  output tok/s             all completion tokens / wall time of the round
  acceptance               accepted / drafted tokens (the daemon's spec-decode counters)
  tokens per draft step    1 + accepted / drafts: tokens one verifying step emitted

  specbench.py http://127.0.0.1:8080 --model smol --streams 1,16 --rounds 2

With --off-url, "off" rounds go to a second server instead (the same model without
speculation) and no "speculative" field is sent: that compares a peer such as
llama-server with and without its own speculation (its acceptance is in its log,
not in this table, which then shows 0).

Standard library only; loopback targets only.
"""
from __future__ import annotations

import argparse
import http.client
import json
import re
import sys
import threading
import time
from urllib.parse import urlsplit

# Repetitive: the answer repeats or edits text given in the prompt (where prompt
# lookup finds its drafts). Chat: nothing to copy from.
TEXT = ("The lighthouse keeper climbed the stairs every evening at dusk. He lit the lamp, wound the clock, "
        "and wrote the weather in his logbook. Ships passed in the night and never knew his name. In the "
        "morning he put out the lamp and walked down to the harbor for bread.")
CODE = ("def update_inventory(inventory, item_name, item_count):\n"
        "    if item_name in inventory:\n"
        "        inventory[item_name] = inventory[item_name] + item_count\n"
        "    else:\n"
        "        inventory[item_name] = item_count\n"
        "    return inventory\n")
TASKS = {
    "repetitive": [
        f"Repeat the following text exactly, word for word:\n\n{TEXT}",
        f"Rewrite this function with item_name renamed to product_name. Output only the code.\n\n{CODE}",
        f"Copy this paragraph and then copy it once more:\n\n{TEXT}",
    ],
    "chat": [
        "Write a short story about a lighthouse keeper.",
        "Explain why the sky is blue in a few sentences.",
        "Give me three ideas for a birthday party.",
    ],
}


def loopback(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit(f"specbench: {url} is not a loopback address")
    return parts.hostname, parts.port or 80


def stream_one(host, port, model, prompt, max_tokens, speculative):
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "temperature": 0,
            "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True}}
    if speculative is not None:
        body["speculative"] = speculative
    conn = http.client.HTTPConnection(host, port, timeout=600)
    conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {response.read()[:200]!r}")
    first = last = None
    tokens = 0
    for line in response:
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event.get("usage"):
            tokens = event["usage"]["completion_tokens"]
        if any(c.get("delta", {}).get("content") for c in event.get("choices", [])):
            last = time.perf_counter()
            first = first or last
    conn.close()
    return tokens, first, last


def spec_counters(host, port, model):
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("GET", "/metrics")
    response = conn.getresponse()
    text = response.read().decode() if response.status == 200 else ""  # a peer may have no metrics
    conn.close()
    out = {}
    for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        m = re.search(rf'^sluice_spec_decode_{name}_total\{{model_name="{re.escape(model)}"\}} (\S+)$', text, re.M)
        out[name] = float(m.group(1)) if m else 0.0
    return out


def run_round(host, port, model, prompts, streams, requests_per_stream, max_tokens, speculative):
    results, errors = [], []
    lock = threading.Lock()

    def worker(index):
        for r in range(requests_per_stream):
            prompt = prompts[(index + r) % len(prompts)]
            try:
                result = stream_one(host, port, model, prompt, max_tokens, speculative)
            except Exception as e:  # reported, not fatal: the table says how many failed
                with lock:
                    errors.append(str(e))
                continue
            with lock:
                results.append(result)

    before = spec_counters(host, port, model)
    start = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    after = spec_counters(host, port, model)
    rates = [(n - 1) / (b - a) for n, a, b in results if n > 1 and b and a and b > a]
    delta = {k: after[k] - before[k] for k in after}
    return {
        "decode_tps": sum(rates) / len(rates) if rates else 0.0,
        "output_tps": sum(n for n, _, _ in results) / wall,
        "tokens": sum(n for n, _, _ in results),
        "acceptance": delta["num_accepted_tokens"] / delta["num_draft_tokens"] if delta["num_draft_tokens"] else 0.0,
        "per_draft": 1 + delta["num_accepted_tokens"] / delta["num_drafts"] if delta["num_drafts"] else 0.0,
        "errors": len(errors),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("--model", required=True)
    p.add_argument("--streams", default="1,16", help="concurrent streams, comma-separated")
    p.add_argument("--tasks", default="repetitive,chat")
    p.add_argument("--rounds", type=int, default=2, help="on/off alternations per cell")
    p.add_argument("--requests-per-stream", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--json", help="also write the rows as JSON")
    p.add_argument("--off-url", help="send the off rounds here (a server without speculation)")
    args = p.parse_args()
    on_server = loopback(args.url)
    off_server = loopback(args.off_url) if args.off_url else on_server
    # Which server and which request field each mode gets.
    modes = {True: (on_server, None if args.off_url else True), False: (off_server, None if args.off_url else False)}
    for (host, port), field in modes.values():
        stream_one(host, port, args.model, "Say hi.", 8, field)  # warm up
    rows = []
    print(f"{'task':<11} {'streams':>7} {'mode':<4} {'decode tok/s/stream':>19} {'output tok/s':>12} "
          f"{'acceptance':>10} {'tok/draft step':>14} {'errors':>6}")
    for task in args.tasks.split(","):
        for streams in (int(s) for s in args.streams.split(",")):
            totals = {True: [], False: []}
            for _ in range(args.rounds):
                for speculative in (False, True):
                    (host, port), field = modes[speculative]
                    totals[speculative].append(run_round(host, port, args.model, TASKS[task], streams,
                                                         args.requests_per_stream, args.max_tokens, field))
            cell = {}
            for speculative in (False, True):
                runs = totals[speculative]
                row = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
                row.update(task=task, streams=streams, mode="on" if speculative else "off")
                cell[speculative] = row
                rows.append(row)
                print(f"{task:<11} {streams:>7} {row['mode']:<4} {row['decode_tps']:>19.1f} {row['output_tps']:>12.1f} "
                      f"{row['acceptance']:>10.2f} {row['per_draft']:>14.2f} {row['errors']:>6.0f}")
            off, on = cell[False], cell[True]
            if off["decode_tps"] > 0 and off["output_tps"] > 0:
                print(f"{'':<11} {'':>7} on/off decode x{on['decode_tps'] / off['decode_tps']:.2f}, "
                      f"output x{on['output_tps'] / off['output_tps']:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
