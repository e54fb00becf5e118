"""deploy/ and the Dockerfile: the compose files parse, the Prometheus configs and the
dashboard's queries are valid, the Kubernetes manifests pass the Kubernetes schemas
(kubernetes-validate, pinned in requirements.txt) and agree with each other.

None needs the daemon, a container engine or a cluster: `docker-compose config` only
reads files, promtool only checks them, kubernetes-validate carries the schemas. The
compose and promtool tests are skipped when their tool is missing. Building and
running the image is `make test-image` (opt-in: minutes, not seconds).
"""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from http_util import parse_metrics, request

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


COMPOSE_FILES = ("docker-compose.yml", "docker-compose.router.yml")
# The variables that pick the compose files' images and published addresses.
IMAGE_VARIABLES = ("SLUICE_IMAGE", "PROMETHEUS_IMAGE", "GRAFANA_IMAGE", "ROUTER_IMAGE",
                   "BUILD_IMAGE", "RUNTIME_IMAGE")
PUBLISH_VARIABLES = ("SLUICE_PUBLISH", "PROMETHEUS_PUBLISH", "GRAFANA_PUBLISH",
                     "ROUTER_PUBLISH", "ROUTER_METRICS_PUBLISH")


def compose_config(name, *args, env=None):
    """The compose file as `docker-compose config` resolves it, parsed; the shell's
    own image and address variables are left out so that the defaults show."""
    compose = compose_command()
    if compose is None:
        pytest.skip("neither docker-compose nor the docker compose plugin is installed "
                    "(Debian: apt-get install docker-compose)")
    base = {k: v for k, v in os.environ.items() if k not in IMAGE_VARIABLES + PUBLISH_VARIABLES}
    proc = subprocess.run(
        [*compose, "-f", str(DEPLOY / name), *args, "config"],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env={**base, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return yaml.safe_load(proc.stdout)


def healthcheck_path(service):
    return re.search(r"GET (\S+) HTTP", " ".join(service["healthcheck"]["test"])).group(1)


def test_compose_file_parses():
    config = compose_config("docker-compose.yml")
    services = config["services"]
    assert set(services) == {"sluice", "prometheus", "grafana"}
    sluice = services["sluice"]
    assert sluice["environment"]["SLUICE_HOST"] == "0.0.0.0"  # inside the container
    assert sluice["stop_grace_period"] == "40s"
    # /ready, not /health: /health answers before the model is loaded.
    assert healthcheck_path(sluice) == "/ready"
    assert "/dev/tcp/127.0.0.1/8080" in " ".join(sluice["healthcheck"]["test"])
    assert services["grafana"]["profiles"] == ["grafana"]  # Grafana only when asked for
    assert "profiles" not in sluice and "profiles" not in services["prometheus"]


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_publishes_on_loopback_only(name):
    """Every published port binds 127.0.0.1 unless the shell says otherwise."""
    for service_name, service in compose_config(name)["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (service_name, port)
    opened = compose_config(name, env={v: "0.0.0.0:18080" for v in PUBLISH_VARIABLES})
    published = [str(p) for s in opened["services"].values() for p in s.get("ports", [])]
    assert published and all(p.startswith("0.0.0.0:18080:") for p in published), published


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_images_are_overridable(name):
    env = {v: f"registry.example/{v.lower()}:1" for v in IMAGE_VARIABLES}
    services = compose_config(name, env=env)["services"]
    for service_name, service in services.items():
        assert service["image"].startswith("registry.example/"), (service_name, service["image"])
    default = compose_config(name)["services"]
    assert default["prometheus"]["image"] != services["prometheus"]["image"]


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


# The engine series under vLLM's names (issue 25), which routers, the endpoint picker
# and the HorizontalPodAutoscaler read; sluice builds them from the same stems as its
# sluice_* ones, so they are not string literals the scan below could find. Counters
# as exposed (with _total); test_metrics.py checks the daemon exports them.
VLLM_METRICS = {
    "vllm:num_requests_running": "gauge",
    "vllm:num_requests_waiting": "gauge",
    "vllm:kv_cache_usage_perc": "gauge",
    "vllm:cache_config_info": "gauge",
    "vllm:prefix_cache_queries_total": "counter",
    "vllm:prefix_cache_hits_total": "counter",
    "vllm:prompt_tokens_total": "counter",
    "vllm:generation_tokens_total": "counter",
    "vllm:time_to_first_token_seconds": "histogram",
    "vllm:inter_token_latency_seconds": "histogram",
    "vllm:e2e_request_latency_seconds": "histogram",
    "vllm:request_queue_time_seconds": "histogram",
}

# What vllm-router 0.1.17 exposes on its --prometheus-port (read off its /metrics in
# front of a sluice on 127.0.0.1; the cache_* pair appears once cache_aware routes).
ROUTER_METRICS = {
    "vllm_router_requests_total": "counter",
    "vllm_router_request_errors_total": "counter",
    "vllm_router_processed_requests_total": "counter",
    "vllm_router_policy_decisions_total": "counter",
    "vllm_router_worker_health": "gauge",
    "vllm_router_active_workers": "gauge",
    "vllm_router_cb_state": "gauge",
    "vllm_router_cache_hits_total": "counter",
    "vllm_router_cache_misses_total": "counter",
    "vllm_router_generate_duration_seconds": "histogram",
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


def exported_metrics(daemon):
    """Metric names a running daemon (the tiny model, after one request) exports, with
    the speech families above (a speech model is not loaded here) and the router's."""
    request(daemon, "POST", "/v1/completions",
            json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 2}), {"Content-Type": "application/json"})
    status, _, text = request(daemon, "GET", "/metrics")
    assert status == 200
    names = {name for name, _ in parse_metrics(text.decode())}
    others = {**SPEECH_METRICS, **ROUTER_METRICS}
    names |= set(others) | {"up"}  # up: Prometheus' own series per target
    histograms = {n for n, kind in others.items() if kind == "histogram"}
    return names | {h + suffix for h in histograms for suffix in ("_bucket", "_sum", "_count")}


def test_queried_metrics_are_parsed_from_promql():
    assert queried_metrics('histogram_quantile(0.5, sum by (le, model_name) '
                           '(rate(sluice_x_bucket{job="a"}[$__rate_interval])))') == {"sluice_x_bucket"}
    assert queried_metrics("sum(rate(a_total[5m])) / sum(b)") == {"a_total", "b"}
    assert queried_metrics("sum by (instance) (vllm:num_requests_waiting) or vector(0)") == \
        {"vllm:num_requests_waiting"}


def test_every_metric_the_dashboard_queries_is_exported(daemon):
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    exported = exported_metrics(daemon)
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


def test_dashboard_has_a_replica_view_and_the_router():
    """The Replicas row: one series per scrape target (instance) of the vLLM-named
    engine series; the Router row: vllm-router's own series, per worker."""
    dashboard = json.loads((DEPLOY / "grafana/dashboards/sluice.json").read_text())
    rows = {}
    current = None
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            current = panel["title"].split(" ")[0]
            rows[current] = []
        elif current:
            rows[current].extend(t["expr"] for t in panel.get("targets", []))
    replicas, router = rows["Replicas"], rows["Router"]
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"):
        exprs = [e for e in replicas if name in e]
        assert exprs and all("instance" in e and "model_name" in e for e in exprs), name
    assert any("sluice_http_requests_total" in e and "instance" in e for e in replicas)
    queried = set().union(*(queried_metrics(e) for e in router))
    assert {"vllm_router_requests_total", "vllm_router_processed_requests_total",
            "vllm_router_worker_health"} <= queried
    assert all("worker" in e for e in router if "processed_requests" in e or "worker_health" in e)


# --- the replicas behind vllm-router ---------------------------------------------------

def router_command(service):
    """The router's flags as a dict (flag -> values), from the compose `command` list."""
    flags, current = {}, None
    for word in service["command"]:
        if word.startswith("--"):
            current, _, value = word.partition("=")
            flags[current] = [value] if value else []
        else:
            flags[current].append(word)
    return flags


def test_router_compose_parses_and_wires_every_replica():
    config = compose_config("docker-compose.router.yml")
    services = config["services"]
    replicas = sorted(n for n in services if re.fullmatch(r"sluice-\d+", n))
    assert len(replicas) >= 2, services.keys()
    assert {"router", "prometheus", "grafana"} <= set(services)
    assert services["grafana"]["profiles"] == ["grafana"]
    for name in replicas:
        replica = services[name]
        assert healthcheck_path(replica) == "/ready"
        assert "ports" not in replica  # only the router is reached from outside
        assert replica["image"] == services[replicas[0]]["image"]
    flags = router_command(services["router"])
    assert flags["--worker-urls"] == [f"http://{n}:8080" for n in replicas]
    assert flags["--health-check-endpoint"] == ["/ready"]
    assert flags["--policy"] == ["cache_aware"]
    assert flags["--prometheus-host"] == ["0.0.0.0"] and flags["--prometheus-port"] == ["29000"]
    assert "vllm-router" in services["router"]["image"]
    assert any("prometheus.router.yml:/etc/prometheus/prometheus.yml" in str(v)
               for v in services["prometheus"]["volumes"])
    # Prometheus scrapes the router and every replica, labelled with it.
    scrape = yaml.safe_load((DEPLOY / "prometheus.router.yml").read_text())["scrape_configs"]
    targets = {job["job_name"]: [(t, c.get("labels", {})) for c in job["static_configs"] for t in c["targets"]]
               for job in scrape}
    assert [t for t, _ in targets["vllm-router"]] == ["router:29000"]
    assert targets["sluice"] == [(f"{n}:8080", {"replica": n}) for n in replicas]
    policy = compose_config("docker-compose.router.yml", env={"ROUTER_POLICY": "power_of_two"})
    assert router_command(policy["services"]["router"])["--policy"] == ["power_of_two"]


def test_router_prometheus_config_is_valid():
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    proc = subprocess.run(["promtool", "check", "config", str(DEPLOY / "prometheus.router.yml")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "SUCCESS" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# --- Kubernetes ----------------------------------------------------------------------
K8S = DEPLOY / "k8s"
KUBERNETES_VERSION = "1.37"  # the newest schemas kubernetes-validate 1.37.0 carries
# Custom resources, whose schemas come with their CRDs, not with Kubernetes: checked
# below by what the InferencePool v1 and HTTPRoute v1 CRDs require.
CUSTOM_KINDS = {("inference.networking.k8s.io/v1", "InferencePool"),
                ("gateway.networking.k8s.io/v1", "HTTPRoute")}


def manifests():
    docs = [(path.name, doc) for path in sorted(K8S.glob("*.yaml"))
            for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert docs, "deploy/k8s/ holds no manifests"
    return docs


def the(kind, name):
    [doc] = [d for _, d in manifests() if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def test_k8s_manifests_pass_the_kubernetes_schemas():
    """Strict: an unknown or misspelt field fails, as `kubectl apply --validate=strict`."""
    import kubernetes_validate

    checked = set()
    for filename, doc in manifests():
        key = (doc["apiVersion"], doc["kind"])
        if key in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as error:
            pytest.fail(f"{filename}: {doc['kind']} {doc['metadata']['name']}: {error.message} "
                        f"at {'.'.join(map(str, error.path))}")
        checked.add(doc["kind"])
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap",
            "PersistentVolumeClaim"} <= checked


def test_k8s_schema_check_can_fail():
    import kubernetes_validate

    deployment = the("Deployment", "sluice")
    broken = json.loads(json.dumps(deployment))
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/ready"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    with pytest.raises(kubernetes_validate.SchemaNotFoundError):  # why CUSTOM_KINDS exist
        kubernetes_validate.validate(the("InferencePool", "sluice"), KUBERNETES_VERSION)


def sluice_container():
    [container] = the("Deployment", "sluice")["spec"]["template"]["spec"]["containers"]
    return container


def test_k8s_deployment_probes_resources_and_model_volume():
    deployment = the("Deployment", "sluice")
    pod = deployment["spec"]["template"]["spec"]
    container = sluice_container()
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["SLUICE_PORT"] == str(port) and env["SLUICE_HOST"] == "0.0.0.0"
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert {"cpu", "memory"} <= set(container["resources"]["requests"])
    # The model comes from the claim, mounted read-only where SLUICE_MODEL points.
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    models = mounts["models"]
    assert models["readOnly"] and env["SLUICE_MODEL"].startswith(models["mountPath"] + "/")
    claim = volumes["models"]["persistentVolumeClaim"]["claimName"]
    assert the("PersistentVolumeClaim", claim)
    # Longer than sluice's 30 s drain; the image's non-root user.
    assert pod["terminationGracePeriodSeconds"] > 30
    dockerfile = (ROOT / "Dockerfile").read_text()
    uid = re.search(r"^USER (\d+):(\d+)", dockerfile, re.MULTILINE)
    assert pod["securityContext"]["runAsUser"] == int(uid.group(1))
    assert pod["securityContext"]["runAsNonRoot"] is True


def test_k8s_service_and_pool_select_the_sluice_pods():
    labels = the("Deployment", "sluice")["spec"]["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in sluice_container()["ports"]}
    service = the("Service", "sluice")
    assert service["spec"]["selector"].items() <= labels.items()
    assert all(p["targetPort"] in ports for p in service["spec"]["ports"])
    # InferencePool v1: spec.selector.matchLabels, spec.targetPorts[].number and
    # spec.endpointPickerRef (name; port.number required when kind is Service).
    pool = the("InferencePool", "sluice")
    spec = pool["spec"]
    assert set(spec) <= {"selector", "targetPorts", "endpointPickerRef", "appProtocol"}
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert [p["number"] for p in spec["targetPorts"]] == [ports["http"]]
    picker = spec["endpointPickerRef"]
    assert set(picker) <= {"group", "kind", "name", "port", "failureMode"}
    assert picker.get("kind", "Service") == "Service" and picker["failureMode"] in ("FailOpen", "FailClose")
    epp_service = the("Service", picker["name"])
    assert picker["port"]["number"] in [p["port"] for p in epp_service["spec"]["ports"]]
    epp = the("Deployment", picker["name"])
    assert epp_service["spec"]["selector"].items() <= epp["spec"]["template"]["metadata"]["labels"].items()
    # The HTTPRoute sends a Gateway's traffic to the pool.
    route = the("HTTPRoute", "sluice")
    [rule] = route["spec"]["rules"]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                    "name": pool["metadata"]["name"]}]
    assert route["spec"]["parentRefs"][0]["kind"] == "Gateway"


def test_k8s_endpoint_picker_reads_the_vllm_metric_names():
    [container] = the("Deployment", "sluice-epp")["spec"]["template"]["spec"]["containers"]
    args = dict(a.removeprefix("--").split("=", 1) for a in container["args"])
    assert args["pool-name"] == "sluice"
    for flag in ("total-queued-requests-metric", "kv-cache-usage-percentage-metric", "cache-info-metric"):
        assert args[flag] in VLLM_METRICS, (flag, args[flag])
    config_name = args["config-file"].split("/")[-1]
    assert config_name in the("ConfigMap", "sluice-epp")["data"]
    role = the("Role", "sluice-epp")
    assert {"inferencepools", "pods"} <= {r for rule in role["rules"] for r in rule["resources"]}


def test_k8s_autoscaler_scales_on_the_waiting_queue_through_the_adapter():
    hpa = the("HorizontalPodAutoscaler", "sluice")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "sluice"}
    [metric] = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods" and metric["pods"]["target"]["type"] == "AverageValue"
    name = metric["pods"]["metric"]["name"]
    # The adapter's rule: the Prometheus series, per namespace and pod, under that name.
    adapter = yaml.safe_load(the("ConfigMap", "prometheus-adapter-sluice-rules")["data"]["config.yaml"])
    [rule] = adapter["rules"]
    series = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", rule["seriesQuery"]).group(1)
    assert series == "vllm:num_requests_waiting" and series in VLLM_METRICS
    assert re.fullmatch(rule["name"]["matches"], series)
    assert re.sub(rule["name"]["matches"], rule["name"]["as"], series) == name
    assert rule["resources"]["overrides"] == {"namespace": {"resource": "namespace"},
                                              "pod": {"resource": "pod"}}
    assert "<<.Series>>" in rule["metricsQuery"] and "<<.GroupBy>>" in rule["metricsQuery"]


# --- the image -------------------------------------------------------------------------

def test_dockerfile_bases_are_arguments_and_sources_are_copied_by_name():
    """What issue 25's trial build hit: fixed bases, `COPY . .`, a /health healthcheck."""
    text = (ROOT / "Dockerfile").read_text()
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    first_from = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
    args = {line.split()[1].split("=")[0] for line in lines[:first_from] if line.startswith("ARG ")}
    froms = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert froms == ["${BUILD_IMAGE}", "${RUNTIME_IMAGE}"] and {"BUILD_IMAGE", "RUNTIME_IMAGE"} <= args
    copies = [line.split()[1] for line in lines if line.startswith("COPY ") and "--from" not in line]
    assert "." not in copies
    # Every folder CMakeLists.txt adds (tests are off in the image) is copied.
    cmake = (ROOT / "CMakeLists.txt").read_text()
    folders = set(re.findall(r"^add_subdirectory\((\w+)\)", cmake, re.MULTILINE)) - {"tests"}
    assert folders <= set(copies), folders - set(copies)
    assert re.search(r"^HEALTHCHECK .*\n.*GET /ready ", text, re.MULTILINE)
    assert "USER 10001:10001" in text
