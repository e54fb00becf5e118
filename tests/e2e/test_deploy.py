"""deploy/: the compose file parses and the Prometheus config is valid.

Neither needs the daemon nor a Docker engine: `docker-compose config` only reads
files, and promtool only checks them. Each test is skipped when its tool is missing.
"""
import json
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


def test_grafana_dashboard_uses_the_provisioned_datasource():
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    datasource = (DEPLOY / "grafana/provisioning/datasources/prometheus.yml").read_text()
    uids = {target["datasource"]["uid"] for panel in dashboard["panels"]
            for target in panel["targets"]}
    assert uids == {"prometheus"} and "uid: prometheus" in datasource
    exprs = " ".join(t["expr"] for p in dashboard["panels"] for t in p["targets"])
    for metric in ("sluice_http_requests_total", "sluice_http_request_duration_seconds_bucket",
                   "sluice_http_requests_in_flight", "process_resident_memory_bytes"):
        assert metric in exprs
