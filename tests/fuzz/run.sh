#!/usr/bin/env bash
# Runs the libFuzzer targets built in BUILD_DIR (tests/fuzz/CMakeLists.txt), each for
# SECONDS, niced, on a throwaway copy of its committed seeds, FUZZ_JOBS of them at a
# time (default: one per core; each fuzzer is one process on one core). Any
# finding (crash, sanitizer report, leak, timeout, out-of-memory) fails the run, after
# every target has had its turn; the log's tail and the reproducer are printed.
#
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]     (all seven when none is named)
#
# Everything a run writes stays under BUILD_DIR/run/<target>/: corpus/ (the seeds
# copied, then what the fuzzer adds), artifacts/ (reproducers), log.
set -uo pipefail

usage() { echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd) || usage
seconds=$2
shift 2
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || usage

# Per target: -max_len, dictionary, and seed folders (from the repository root) read
# besides the committed corpus. libFuzzer writes only into the first corpus folder,
# the copy, so these are read in place.
declare -A max_len=([fuzz_http]=8192 [fuzz_proto]=4096 [fuzz_gguf]=16384
  [fuzz_safetensors]=4096 [fuzz_tokenizer_json]=8192 [fuzz_chat_template]=8192 [fuzz_multipart]=4096)
declare -A dict=([fuzz_http]=http [fuzz_proto]=proto [fuzz_gguf]=gguf
  [fuzz_safetensors]=safetensors [fuzz_tokenizer_json]=tokenizer_json
  [fuzz_chat_template]=chat_template [fuzz_multipart]=multipart)
declare -A seeds=([fuzz_gguf]=tests/fixtures [fuzz_chat_template]=tests/fixtures/chat/templates)
all=(fuzz_http fuzz_proto fuzz_gguf fuzz_safetensors fuzz_tokenizer_json fuzz_chat_template fuzz_multipart)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [ -n "${max_len[$t]:-}" ] || { echo "fuzz: unknown target $t (known: ${all[*]})" >&2; exit 2; }
  [ -x "$build/$t" ] || { echo "fuzz: $build/$t is not built" >&2; exit 2; }
done

# One input slower than this is a finding (libFuzzer's default is 20 minutes); the
# slowest seen on a loaded 2-core machine is well under a second.
unit_timeout=${FUZZ_UNIT_TIMEOUT:-30}
# Source lines in the stacks: the sanitizers look for llvm-symbolizer on PATH, which
# Debian's llvm-14 leaves beside clang (/usr/lib/llvm-14/bin) unless `llvm` is installed.
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && ! command -v llvm-symbolizer >/dev/null; then
  symbolizer=$(dirname "$(readlink -f "$(command -v clang++)")")/llvm-symbolizer
  [ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH=$symbolizer
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# The word after `key` where the log last has it: last_value LOG ' cov:' -> 1234.
last_value() { grep -o "$2 *[^ ]*" "$1" | tail -n 1 | awk '{print $NF}'; }

# Fuzzes target $1, then leaves its exit code and summary line in its work folder.
run_target() {
  local t=$1 work=$build/run/$1 extra=() t0=$SECONDS rc took
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  cp "$root/tests/fuzz/corpus/$t/"* "$work/corpus/"
  [ -n "${seeds[$t]:-}" ] && extra=("$root/${seeds[$t]}")
  echo "fuzz: $t for ${seconds} s (log: $work/log)"
  # The outer timeout only guards against a fuzzer that stops answering at all.
  (cd "$work" && nice -n 19 timeout -k 10 $((seconds + 600)) "$build/$t" \
      corpus "${extra[@]}" -max_total_time="$seconds" -max_len="${max_len[$t]}" \
      -dict="$root/tests/fuzz/${dict[$t]}.dict" -timeout="$unit_timeout" \
      -artifact_prefix=artifacts/ -print_final_stats=1) >"$work/log" 2>&1
  rc=$?
  took=$((SECONDS - t0))
  printf '%-20s %4s s  runs %9s  exec/s %6s  cov %5s  ft %6s  corpus %9s  slowest %2s s  rss %4s MB\n' \
    "$t" "$took" "$(last_value "$work/log" stat::number_of_executed_units:)" \
    "$(last_value "$work/log" stat::average_exec_per_sec:)" "$(last_value "$work/log" ' cov:')" \
    "$(last_value "$work/log" ' ft:')" "$(last_value "$work/log" ' corp:')" \
    "$(last_value "$work/log" stat::slowest_unit_time_sec:)" "$(last_value "$work/log" stat::peak_rss_mb:)" \
    >"$work/summary"
  echo "$rc" >"$work/rc"
}

started=$SECONDS
max_jobs=${FUZZ_JOBS:-$(nproc)}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; done
  run_target "$t" &
done
wait

failed=()
summary=()
for t in "${targets[@]}"; do
  work=$build/run/$t
  rc=$(cat "$work/rc" 2>/dev/null || echo "?")
  line=$(cat "$work/summary" 2>/dev/null || echo "$t (no summary)")
  if [ "$rc" = 0 ]; then
    summary+=("ok    $line")
    continue
  fi
  failed+=("$t")
  summary+=("FAIL  $line  (exit $rc)")
  echo "fuzz: $t FAILED (exit $rc); the end of its log:"
  tail -n 80 "$work/log" | sed 's/^/    /'
  reproducers=$(find "$work/artifacts" -type f ! -name 'slow-unit-*' | sort)
  if [ -n "$reproducers" ]; then
    # The bytes too (at most -max_len), so a CI log alone rebuilds the file.
    echo "fuzz: reproducer(s) of $t; rerun one with $build/$t -timeout=$unit_timeout FILE"
    while read -r file; do
      echo "    $file"
      echo "    base64 (echo '...' | base64 -d > FILE): $(base64 -w0 "$file")"
    done <<<"$reproducers"
  elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "fuzz: $t did not stop $((seconds + 600)) s after it started; killed"
  fi
done

echo "fuzz: ${#targets[@]} target(s), ${seconds} s each, ${max_jobs} at a time, $((SECONDS - started)) s in all"
printf '  %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (logs and reproducers under $build/run/<target>/)"
  exit 1
fi
echo "fuzz: no findings"
