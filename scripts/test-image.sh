#!/usr/bin/env bash
# `make test-image`: runs the images `make image` built, all on 127.0.0.1, and checks
#   1. the image: HEALTHCHECK on /ready kept (docker format), user 10001:10001;
#   2. one container (read-only root, as deploy/k8s runs it): /ready, /v1/models, a
#      chat answer, the HEALTHCHECK passing, the process's uid, the port bound to
#      127.0.0.1 only, `podman stop` draining with exit status 0;
#   3. deploy/docker-compose.yml: sluice and Prometheus, Prometheus scraping sluice;
#   4. deploy/docker-compose.router.yml: two replicas behind vllm-router, chat through
#      the router, Prometheus scraping the router and both replicas.
# The compose files run under docker-compose through podman's Docker-compatible API
# (a socket of this run's own). Every wait polls for its condition with a generous
# limit. Prints one line per check and the timings docs/deployment.md quotes.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
IMAGE=${IMAGE:-localhost/sluice:latest}
ROUTER_IMAGE=${ROUTER_IMAGE:-localhost/sluice-vllm-router:0.1.17}
PROMETHEUS_IMAGE=${PROMETHEUS_IMAGE:-localhost/sluice-prometheus:bookworm}
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/scripts/podman-containers.conf}
MODEL_ID=SmolLM2-135M-Instruct.Q4_1

work=$(mktemp -d /tmp/sluice-test-image.XXXXXX)
name=sluice-test-image-$$
project=sluicetest$$
service_pid=""
compose_files=()

say() { printf '[test-image] %s\n' "$*"; }
fail() { printf '[test-image] FAIL: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

cleanup() {
  podman rm -f -t 0 "$name" >/dev/null 2>&1 || true
  for f in "${compose_files[@]}"; do
    DOCKER_HOST=unix://$work/podman.sock docker-compose -p "$project" -f "$f" down -v -t 5 >/dev/null 2>&1 || true
  done
  [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# wait_for DESCRIPTION LIMIT_S COMMAND...: runs COMMAND until it succeeds.
wait_for() {
  local what=$1 limit=$2 start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ $((SECONDS - start)) -lt "$limit" ] || fail "$what: not within ${limit}s"
    sleep 1
  done
}
http_code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$1"; }
answers_200() { [ "$(http_code "$1")" = 200 ]; }
chat() {  # chat BASE_URL -> the answer's text; fails on anything but a non-empty answer
  curl -sf --max-time 120 "$1/v1/chat/completions" -H 'Content-Type: application/json' \
    -d "{\"model\": \"$MODEL_ID\", \"messages\": [{\"role\": \"user\", \"content\": \"Name a colour.\"}],
         \"max_tokens\": 16, \"temperature\": 0}" |
    python3 -c 'import json, sys; t = json.load(sys.stdin)["choices"][0]["message"]["content"]; assert t.strip(); print(t)'
}
# prometheus_value BASE QUERY -> the first sample's value ("" when none)
prometheus_value() {
  curl -sf --max-time 10 "$1/api/v1/query" --data-urlencode "query=$2" |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")'
}
prometheus_equals() { [ "$(prometheus_value "$1" "$2")" = "$3" ]; }

# --- 1. the image -----------------------------------------------------------------------
podman image exists "$IMAGE" || fail "$IMAGE is missing: run make image"
health=$(podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")
grep -q 'GET /ready ' <<<"$health" || fail "no HEALTHCHECK on /ready in $IMAGE: $health"
user=$(podman image inspect --format '{{.Config.User}}' "$IMAGE")
[ "$user" = 10001:10001 ] || fail "image user is '$user', not 10001:10001"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
say "image $IMAGE: $((size / 1000000)) MB, user $user, HEALTHCHECK on /ready kept"

# --- 2. one container ------------------------------------------------------------------
port=$(free_port)
base=http://127.0.0.1:$port
start=$(now)
# Without systemd (this VM) podman cannot schedule the HEALTHCHECK's timer and says
# so on stderr; the container runs, and `podman healthcheck run` below runs it.
podman run -d --name "$name" --read-only --tmpfs /tmp -p "127.0.0.1:$port:8080" "$IMAGE" \
  >/dev/null 2>"$work/run.err" || { cat "$work/run.err" >&2; fail "podman run"; }
wait_for "/ready of the container" 180 answers_200 "$base/ready"
say "container ready (/ready 200) $(since "$start") s after podman run"
models=$(curl -sf --max-time 10 "$base/v1/models")
grep -q "\"$MODEL_ID\"" <<<"$models" || fail "/v1/models: $models"
say "/v1/models lists $MODEL_ID"
start=$(now)
answer=$(chat "$base") || fail "no chat answer"
say "chat answered in $(since "$start") s: ${answer//$'\n'/ }"
podman healthcheck run "$name" >/dev/null || fail "the HEALTHCHECK fails on a ready container"
say "HEALTHCHECK passes (podman healthcheck run)"
uid=$(podman exec "$name" id -u)
[ "$uid" = 10001 ] || fail "the daemon runs as uid $uid"
say "runs as uid $uid, read-only root file system"
bound=$(podman port "$name" 8080/tcp)
[ "$bound" = "127.0.0.1:$port" ] || fail "published on $bound"
say "published on $bound only"
start=$(now)
podman stop -t 40 "$name" >/dev/null 2>>"$work/run.err"
status=$(podman inspect --format '{{.State.ExitCode}}' "$name")
[ "$status" = 0 ] || { podman logs --tail 20 "$name" >&2; fail "exit status $status after podman stop"; }
say "podman stop: drained and exited 0 in $(since "$start") s"
podman rm -f "$name" >/dev/null 2>>"$work/run.err"

# --- compose, through podman's Docker API ------------------------------------------------
podman system service --time=0 "unix://$work/podman.sock" >"$work/service.log" 2>&1 &
service_pid=$!
wait_for "podman's API socket" 30 test -S "$work/podman.sock"
export DOCKER_HOST=unix://$work/podman.sock
compose() { docker-compose -p "$project" -f "$root/deploy/$1" "${@:2}"; }
export SLUICE_IMAGE=$IMAGE ROUTER_IMAGE PROMETHEUS_IMAGE

# --- 3. sluice and Prometheus ------------------------------------------------------------
sluice_port=$(free_port) prometheus_port=$(free_port)
export SLUICE_PUBLISH=127.0.0.1:$sluice_port PROMETHEUS_PUBLISH=127.0.0.1:$prometheus_port
compose_files+=("$root/deploy/docker-compose.yml")
start=$(now)
compose docker-compose.yml up -d --no-build >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up"; }
wait_for "/ready of the compose sluice" 180 answers_200 "http://$SLUICE_PUBLISH/ready"
chat "http://$SLUICE_PUBLISH" >/dev/null || fail "no chat answer from the compose sluice"
prometheus=http://$PROMETHEUS_PUBLISH
wait_for "Prometheus scraping sluice (up == 1)" 120 prometheus_equals "$prometheus" 'up{job="sluice"}' 1
wait_for "sluice's series in Prometheus" 60 prometheus_equals "$prometheus" \
  'count(sluice_http_requests_total{route="/v1/chat/completions"}) > bool 0' 1
say "compose: sluice ready and answering, Prometheus scraping it ($(since "$start") s after up)"
compose docker-compose.yml down -v -t 40 >/dev/null 2>&1
compose_files=()

# --- 4. two replicas behind vllm-router --------------------------------------------------
router_port=$(free_port) router_metrics_port=$(free_port) prometheus_port=$(free_port)
export ROUTER_PUBLISH=127.0.0.1:$router_port ROUTER_METRICS_PUBLISH=127.0.0.1:$router_metrics_port
export PROMETHEUS_PUBLISH=127.0.0.1:$prometheus_port
compose_files+=("$root/deploy/docker-compose.router.yml")
start=$(now)
compose docker-compose.router.yml up -d --no-build >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; fail "compose up (router)"; }
router=http://$ROUTER_PUBLISH
wait_for "a chat answer through vllm-router" 240 chat "$router"
for _ in 1 2 3 4; do chat "$router" >/dev/null || fail "a chat request through the router failed"; done
say "router: 5 chat answers through vllm-router ($(since "$start") s after up)"
prometheus=http://$PROMETHEUS_PUBLISH
wait_for "Prometheus scraping both replicas" 120 prometheus_equals "$prometheus" 'sum(up{job="sluice"})' 2
wait_for "Prometheus scraping the router" 120 prometheus_equals "$prometheus" 'up{job="vllm-router"}' 1
wait_for "the router's series in Prometheus" 60 prometheus_equals "$prometheus" \
  'sum(vllm_router_processed_requests_total) >= bool 5' 1
workers=$(prometheus_value "$prometheus" 'sum(vllm_router_worker_health)')
[ "$workers" = 2 ] || fail "the router sees $workers healthy replicas, not 2"
say "router: Prometheus scrapes the router and both replicas; the router sees 2 healthy replicas"
compose docker-compose.router.yml down -v -t 40 >/dev/null 2>&1
compose_files=()

say "ok"
