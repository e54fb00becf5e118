#!/usr/bin/env python3
"""sluice against llama.cpp on the same GGUF files, one format per file: prompt
processing (llama-bench pp, `sluice bench` prefill) and generation (tg, the one-stream
generation run), the two engines alternating round by round on the same threads, the
median of the rounds and the spread of the per-round ratios printed as a Markdown
table with the machine's CPU, its kernel path and copy bandwidth.

    python3 loadtest/format_matrix.py --llama-bench /path/to/llama-bench \\
        --sluice build/server/sluice --rounds 5 --threads 2 \\
        Q4_1=models/SmolLM2-135M-Instruct.Q4_1.gguf F16=/tmp/smol-f16.gguf ...

Each argument is LABEL=FILE. The machine swings in speed between minutes, so only the
ratios of alternating runs mean much; docs/benchmarks.md has the numbers and how the
test files were made.
"""
import argparse
import json
import statistics
import subprocess
import tempfile


def llama_bench(binary, model, prompt, generate, threads):
    out = subprocess.run([binary, "-m", model, "-p", str(prompt), "-n", str(generate), "-r", "1",
                          "-t", str(threads), "-o", "json"], capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == prompt and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == generate and r["n_prompt"] == 0)
    return pp, tg


def sluice_bench(binary, model, prompt, generate, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "bench", "--model", model, "--prompt", str(prompt), "--generate", str(generate),
                        "--threads", str(threads), "--streams", "1", "--batches", "1", "--steps", "5",
                        "--prefill-runs", "1", "--json", f.name], capture_output=True, text=True, check=True)
        result = json.load(open(f.name))
    return result["prefill"]["tokens_per_second"], result["generate"]["tokens_per_second"], result


def spread(values):
    return f"{min(values):.2f}–{max(values):.2f}" if len(values) > 1 else f"{values[0]:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-bench", required=True)
    parser.add_argument("--sluice", default="build/server/sluice")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=512)
    parser.add_argument("--generate", type=int, default=128)
    parser.add_argument("files", nargs="+", metavar="LABEL=FILE")
    args = parser.parse_args()

    files = [f.split("=", 1) for f in args.files]
    runs = {label: {"sp": [], "st": [], "lp": [], "lt": [], "gbps": []} for label, _ in files}
    machine = {}
    for round_index in range(args.rounds):
        for label, path in files:
            # Alternate which engine goes first, so neither always meets the same minute.
            order = ["sluice", "llama"] if round_index % 2 == 0 else ["llama", "sluice"]
            for engine in order:
                if engine == "sluice":
                    pp, tg, result = sluice_bench(args.sluice, path, args.prompt, args.generate, args.threads)
                    runs[label]["sp"].append(pp)
                    runs[label]["st"].append(tg)
                    runs[label]["gbps"].append(result["generate"]["achieved_gbps"] / result["copy"]["peak_gbps"])
                    machine = {"cpu": result["machine"]["cpu_model"], "path": result["kernels"]["path"],
                               "copy": result["copy"]["peak_gbps"]}
                else:
                    pp, tg = llama_bench(args.llama_bench, path, args.prompt, args.generate, args.threads)
                    runs[label]["lp"].append(pp)
                    runs[label]["lt"].append(tg)
            r = runs[label]
            print(f"round {round_index + 1} {label}: pp {r['sp'][-1]:.1f} vs {r['lp'][-1]:.1f}, "
                  f"tg {r['st'][-1]:.1f} vs {r['lt'][-1]:.1f} tok/s", flush=True)

    print(f"\n{machine.get('cpu', '?')}, sluice kernel path {machine.get('path', '?')}, {args.threads} threads, "
          f"copy {machine.get('copy', 0):.1f} GB/s (last run); median of {args.rounds} alternating rounds, "
          f"ratio = sluice / llama.cpp per round (min–max)\n")
    print(f"| format | sluice pp{args.prompt} | llama.cpp pp{args.prompt} | ratio | sluice tg{args.generate} | "
          f"llama.cpp tg{args.generate} | ratio | sluice tg, share of copy |")
    print("|---|---|---|---|---|---|---|---|")
    med = statistics.median
    for label, _ in files:
        r = runs[label]
        pp_ratio = [s / l for s, l in zip(r["sp"], r["lp"])]
        tg_ratio = [s / l for s, l in zip(r["st"], r["lt"])]
        print(f"| {label} | {med(r['sp']):.1f} | {med(r['lp']):.1f} | {med(pp_ratio):.2f} ({spread(pp_ratio)}) | "
              f"{med(r['st']):.1f} | {med(r['lt']):.1f} | {med(tg_ratio):.2f} ({spread(tg_ratio)}) | "
              f"{100 * med(r['gbps']):.0f}% |")


if __name__ == "__main__":
    main()
