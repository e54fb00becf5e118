"""What the speculative-decoding e2e tests share: the default model served as "smol"
with a given speculative config, and its vLLM spec-decode counters."""
import json

from conftest import DEFAULT_MODEL, require_model, start_module_daemon
from http_util import metric, parse_metrics, request


def serve_speculative(tmp_path_factory, speculative):
    require_model(DEFAULT_MODEL, "`make model`")
    config = {"models": [{"path": str(DEFAULT_MODEL), "name": "smol", "speculative": speculative}]}
    path = tmp_path_factory.mktemp("speculative") / "sluice.json"
    path.write_text(json.dumps(config))
    return start_module_daemon("--config", str(path))


def spec_counters(daemon):
    samples = parse_metrics(request(daemon, "GET", "/metrics")[2].decode())
    return {name: metric(samples, f"vllm:spec_decode_{name}_total", model_name="smol")
            for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")}
