"""/metrics: true numbers, valid exposition format, and a real Prometheus scrape."""
import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

from http_util import metric, parse_metrics, request


def scrape(daemon):
    status, headers, body = request(daemon, "GET", "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=0.0.4")
    return body.decode()


def settled_scrape(daemon, expected_health):
    """The daemon records a request just after its last byte is written, so the
    client can scrape a moment before the record lands: retry briefly."""
    deadline = time.monotonic() + 60  # generous: the machine may be loaded, or running ASan
    while True:
        samples = parse_metrics(scrape(daemon))
        settled = (metric(samples, "sluice_http_requests_in_flight") == 1 and
                   metric(samples, "sluice_http_request_duration_seconds_count",
                          route="/v1/models/{id}", method="GET") == 1 and
                   metric(samples, "sluice_http_requests_total",
                          route="/health", method="GET", status="200") == expected_health)
        if settled or time.monotonic() > deadline:
            return samples
        time.sleep(0.05)


def test_request_counts_and_durations_are_true(daemon):
    for _ in range(7):
        assert request(daemon, "GET", "/health")[0] == 200
    for _ in range(3):
        assert request(daemon, "GET", "/no/such/path")[0] == 404
    assert request(daemon, "GET", "/v1/models/tiny")[0] == 200

    samples = settled_scrape(daemon, expected_health=7)
    assert metric(samples, "sluice_http_requests_total",
                  route="/health", method="GET", status="200") == 7
    assert metric(samples, "sluice_http_requests_total",
                  route="unmatched", method="GET", status="404") == 3
    assert metric(samples, "sluice_http_requests_total",
                  route="/v1/models/{id}", method="GET", status="200") == 1
    assert metric(samples, "sluice_http_request_duration_seconds_count",
                  route="/health", method="GET") == 7
    assert metric(samples, "sluice_http_request_duration_seconds_bucket",
                  route="/health", method="GET", le="+Inf") == 7
    assert metric(samples, "sluice_http_request_duration_seconds_sum",
                  route="/health", method="GET") > 0
    # The scrape itself is the one request in flight.
    assert metric(samples, "sluice_http_requests_in_flight") == 1
    assert metric(samples, "sluice_http_connections_open") >= 1


def test_process_metrics_are_plausible(daemon):
    samples = parse_metrics(scrape(daemon))
    assert metric(samples, "process_resident_memory_bytes") > 1 << 20
    assert metric(samples, "process_virtual_memory_bytes") > metric(samples, "process_resident_memory_bytes")
    assert metric(samples, "process_open_fds") >= 4  # stdio, listener, the scrape's socket
    assert metric(samples, "process_max_fds") >= metric(samples, "process_open_fds")
    assert abs(metric(samples, "process_start_time_seconds") - time.time()) < 120
    assert metric(samples, "process_cpu_seconds_total") >= 0


def test_promtool_accepts_the_exposition(start_daemon):
    # sluice's own names, strictly; the vllm: copies (on by default) are checked in
    # test_replica_contract.py, since promtool's linter flags every ':' in a name.
    daemon = start_daemon("--metrics-vllm-names", "false")
    request(daemon, "GET", "/health")
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: scripts/install-deps.sh installs Debian's prometheus"
    result = subprocess.run([promtool, "check", "metrics"], input=scrape(daemon),
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_real_prometheus_scrapes_the_daemon(daemon, tmp_path):
    prometheus = shutil.which("prometheus")
    assert prometheus, "prometheus missing: scripts/install-deps.sh installs Debian's prometheus"
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n"
        "scrape_configs:\n"
        "  - job_name: sluice\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{daemon.port}']\n")
    port = free_port()
    proc = subprocess.Popen(
        [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        query = urllib.parse.urlencode({"query": 'sluice_http_requests_total{job="sluice"}'})
        up_query = urllib.parse.urlencode({"query": 'up{job="sluice"}'})
        deadline = time.monotonic() + 45
        up = series = None
        while time.monotonic() < deadline:
            time.sleep(1)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{up_query}",
                                            timeout=5) as response:
                    up = json.load(response)["data"]["result"]
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/query?{query}",
                                            timeout=5) as response:
                    series = json.load(response)["data"]["result"]
            except OSError:
                continue
            if up and up[0]["value"][1] == "1" and series:
                break
        assert up and up[0]["value"][1] == "1", up
        routes = {s["metric"].get("route") for s in series}
        assert "/metrics" in routes, series  # Prometheus saw its own earlier scrapes
    finally:
        proc.terminate()
        proc.wait(timeout=15)
