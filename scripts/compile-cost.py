#!/usr/bin/env python3
"""What a build tree costs to compile from an empty ccache, estimated by sampling.

Compiles every STRIDE-th translation unit of a tree's compile_commands.json (sorted by
path, so the sample spreads over every folder) once, without ccache, one at a time,
and measures each compile's CPU time (user + sys of the compiler and its children).
The sum over the sample times STRIDE estimates the tree's cold compile CPU; on N cores
a cold `cmake --build` takes about that divided by N, plus the links. Run it on an
idle machine: the numbers are CPU seconds, but a busy machine still slows them.

  python3 scripts/compile-cost.py build-asan                  every 6th TU, the tree's flags
  python3 scripts/compile-cost.py build-asan --stride 1       every TU (the real cold cost)
  python3 scripts/compile-cost.py build-asan --extra=-fno-sanitize=null  flags appended
  python3 scripts/compile-cost.py build --filter '\\.cu$'      the CUDA sources only

The tree must have been configured with CMAKE_EXPORT_COMPILE_COMMANDS=ON (this
project's CMakeLists.txt sets it). Objects are written to a temporary folder, never
into the tree.
"""
import argparse
import json
import os
import re
import resource
import shlex
import subprocess
import sys
import tempfile


def child_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def compile_once(entry, extra, out_dir):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    # Write the object elsewhere: the tree's own objects (and ninja's view of them) stay.
    out = os.path.join(out_dir, "unit.o")
    if "-o" in args:
        args[args.index("-o") + 1] = out
    if args and os.path.basename(args[0]) == "ccache":
        args = args[1:]
    before = child_cpu_seconds()
    result = subprocess.run(args + extra, cwd=entry["directory"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"compile failed: {entry['file']}\n{result.stderr[-2000:]}")
    return child_cpu_seconds() - before


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree", help="a configured build folder")
    parser.add_argument("--stride", type=int, default=6, help="compile every STRIDE-th TU")
    parser.add_argument("--extra", action="append", default=[],
                        help="a flag appended to every compile (repeatable)")
    parser.add_argument("--filter", default="", help="only TUs whose path matches this regex")
    parser.add_argument("--resume", type=int, default=0,
                        help="skip the first RESUME sampled TUs (continue an interrupted run)")
    opts = parser.parse_args()

    with open(os.path.join(opts.tree, "compile_commands.json")) as f:
        entries = sorted(json.load(f), key=lambda e: e["file"])
    entries = [e for e in entries if re.search(opts.filter, e["file"])]
    sample = entries[::opts.stride]
    costs = []
    with tempfile.TemporaryDirectory() as out_dir:
        for i, entry in enumerate(sample):
            if i < opts.resume:
                continue
            seconds = compile_once(entry, opts.extra, out_dir)
            costs.append((seconds, os.path.relpath(entry["file"])))
            print(f"[{i + 1}/{len(sample)}] {seconds:6.1f} s  {costs[-1][1]}", flush=True)
    total = sum(c for c, _ in costs)
    estimate = total * len(entries) / max(1, len(costs))
    print(f"\n{opts.tree}: {len(entries)} TUs, sampled {len(costs)} "
          f"(every {opts.stride}{', flags + ' + ' '.join(opts.extra) if opts.extra else ''})")
    print(f"sample CPU {total:.0f} s; estimated cold compile CPU {estimate:.0f} s "
          f"= {estimate / 60:.1f} CPU-minutes, {estimate / 120:.1f} minutes on 2 cores")
    for seconds, path in sorted(costs, reverse=True)[:8]:
        print(f"  {seconds:6.1f} s  {path}")


if __name__ == "__main__":
    main()
