"""deploy/: the compose file parses and the Prometheus config is valid.

Neither needs the daemon nor a Docker engine: `docker-compose config` only reads
files, and promtool only checks them. Each test is skipped when its tool is missing.
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def compose_command():
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    return None


def test_compose_file_parses():
    compose = compose_command()
    if compose is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed "
                    "(Debian: apt-get install docker-compose)")
    proc = subprocess.run(
        [*compose, "-f", str(DEPLOY / "docker-compose.yml"), "config"],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    config = proc.stdout
    for service in ("sluice", "prometheus", "grafana"):
        assert f"\n  {service}:\n" in config, f"service {service} missing:\n{config}"
    assert "SLUICE_HOST: 0.0.0.0" in config
    assert "stop_grace_period: 40s" in config
    assert "/dev/tcp/127.0.0.1/8080" in config  # the healthcheck


def test_compose_speech_variant_parses(tmp_path):
    """The commented `#~` lines of the compose file (a Qwen3-TTS folder served next to
    the text model) make a valid compose file once uncommented."""
    compose = compose_command()
    if compose is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed "
                    "(Debian: apt-get install docker-compose)")
    text = (DEPLOY / "docker-compose.yml").read_text()
    variant = re.sub(r"^(\s*)#~ ", r"\1", text, flags=re.MULTILINE)
    assert variant != text, "the compose file lost its speech variant"
    path = tmp_path / "docker-compose.yml"
    path.write_text(variant)
    proc = subprocess.run(
        [*compose, "-f", str(path), "--project-directory", str(DEPLOY), "config"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={**os.environ, "SLUICE_TTS_DIR": "/srv/Qwen3-TTS-12Hz-0.6B-CustomVoice"})
    assert proc.returncode == 0, proc.stderr
    assert "tts=/speech" in proc.stdout
    assert "/srv/Qwen3-TTS-12Hz-0.6B-CustomVoice:/speech:ro" in proc.stdout
    assert "/models/SmolLM2-135M-Instruct.Q4_1.gguf" in proc.stdout  # the text model stays


def test_prometheus_config_is_valid():
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    proc = subprocess.run(
        ["promtool", "check", "config", str(DEPLOY / "prometheus.yml")],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout + proc.stderr
    text = (DEPLOY / "prometheus.yml").read_text()
    assert "sluice:8080" in text and "/metrics" in text


# The speech metric families the /v1/audio/speech route exports (issue 12), by the
# names the dashboard's Speech row queries.
SPEECH_METRICS = {
    "sluice_speech_time_to_first_audio_seconds": "histogram",
    "sluice_speech_real_time_factor": "histogram",
    "sluice_speech_audio_seconds_total": "counter",
    "sluice_speech_frames_per_step": "histogram",
    "sluice_speech_requests_total": "counter",
}


def dashboard_targets(dashboard):
    """Every query target of every panel; rows have none."""
    return [t for panel in dashboard["panels"] for t in panel.get("targets", [])]


def queried_metrics(expr):
    """The metric names a PromQL expression reads: what is left once label matchers,
    range selectors, `by (...)` lists and function calls are taken out."""
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\b(?:by|without)\s*\([^)]*\)", " ", expr)
    names = re.findall(r"\b[a-zA-Z_:][a-zA-Z0-9_:]*\b(?!\s*\()", expr)
    return {n for n in names if n not in ("by", "without", "on", "ignoring", "and", "or", "unless")}


def exported_metrics():
    """Metric names the daemon's sources register (string literals of server/metrics/*.cpp)
    and the speech families above, with the _bucket/_sum/_count series of histograms."""
    sources = " ".join(p.read_text() for p in (ROOT / "server" / "metrics").glob("*.cpp"))
    names = set(re.findall(r'"((?:sluice|process)_[a-z0-9_]+)"', sources))
    histograms = set(re.findall(
        r'(?:histogram\(\w+,\s*|BuildHistogram\(\)\s*\.Name\()"([a-z0-9_]+)"', sources))
    assert "sluice_http_request_duration_seconds" in histograms  # the pattern still matches
    names |= set(SPEECH_METRICS)
    histograms |= {n for n, kind in SPEECH_METRICS.items() if kind == "histogram"}
    return names | {h + suffix for h in histograms for suffix in ("_bucket", "_sum", "_count")}


def test_queried_metrics_are_parsed_from_promql():
    assert queried_metrics('histogram_quantile(0.5, sum by (le, model_name) '
                           '(rate(sluice_x_bucket{job="a"}[$__rate_interval])))') == {"sluice_x_bucket"}
    assert queried_metrics("sum(rate(a_total[5m])) / sum(b)") == {"a_total", "b"}


def test_every_metric_the_dashboard_queries_is_exported():
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    exported = exported_metrics()
    queried = set().union(*(queried_metrics(t["expr"]) for t in dashboard_targets(dashboard)))
    assert queried, "the dashboard queries nothing"
    assert queried <= exported, f"queried but not exported: {sorted(queried - exported)}"
    # The Speech row covers every speech family.
    for name in SPEECH_METRICS:
        assert any(q.startswith(name) for q in queried), name


def test_every_dashboard_query_is_valid_promql(tmp_path):
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    # promtool parses the expressions of recording rules; Grafana's interval becomes 5m.
    rules = [{"record": f"dashboard:query_{i}", "expr": t["expr"].replace("$__rate_interval", "5m")}
             for i, t in enumerate(dashboard_targets(dashboard))]
    path = tmp_path / "rules.json"  # YAML is a superset of JSON
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(rules)} rules found" in proc.stdout + proc.stderr


def test_dashboard_shows_speech_per_model_next_to_text():
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    rows = [p["title"] for p in dashboard["panels"] if p["type"] == "row"]
    assert "Speech" in rows
    for target in dashboard_targets(dashboard):
        if re.search(r"sluice_(speech_|num_requests|kv_cache|generation_tokens|time_to_first)", target["expr"]):
            assert "model_name" in target["expr"], target["expr"]  # one series per model, TTS ones too
            assert "{{model_name}}" in target["legendFormat"], target
    # Panels stay on the grid without overlapping.
    cells = set()
    for panel in dashboard["panels"]:
        g = panel["gridPos"]
        assert g["x"] + g["w"] <= 24
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, panel["title"]
                cells.add((x, y))


def test_grafana_dashboard_uses_the_provisioned_datasource():
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    datasource = (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    uids = {target["datasource"]["uid"] for target in dashboard_targets(dashboard)}
    assert uids == {"prometheus"} and "uid: prometheus" in datasource
    exprs = " ".join(t["expr"] for t in dashboard_targets(dashboard))
    for metric in ("sluice_http_requests_total", "sluice_http_request_duration_seconds_bucket",
                   "sluice_http_requests_in_flight", "process_resident_memory_bytes"):
        assert metric in exprs
