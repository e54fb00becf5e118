"""Small HTTP helpers on the standard library, for the end-to-end tests."""
import http.client
import json
import socket
import time


def request(daemon, method, path, body=None, headers=None, timeout=10):
    """One request on a fresh connection: returns (status, headers dict, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def post_json(daemon, path, body, timeout=10):
    """POST body (a JSON-serializable value): returns (status, headers dict, body bytes)."""
    return request(daemon, "POST", path, json.dumps(body), {"Content-Type": "application/json"}, timeout=timeout)


def post_speech(daemon, body, timeout=60):
    """POST /v1/audio/speech with a JSON body: returns (status, headers dict, body bytes)."""
    return post_json(daemon, "/v1/audio/speech", body, timeout)


def get_json(daemon, path, headers=None):
    status, head, body = request(daemon, "GET", path, headers=headers)
    return status, head, json.loads(body)


def assert_openai_error(body, status_code=None, code=None, param=None):
    data = json.loads(body)
    assert set(data) == {"error"}, data
    error = data["error"]
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and error["type"]
    if code is not None:
        assert error["code"] == code, error
    if param is not None:
        assert error["param"] == param, error
    return error


def raw_exchange(port, payload, timeout=5.0):
    """Sends raw bytes and reads until the server closes; returns what came back."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        return read_until_closed(sock, timeout)


def read_until_closed(sock, timeout=5.0):
    sock.settimeout(timeout)
    chunks = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def parse_metrics(text):
    """Prometheus text format -> {(name, frozenset(labels.items())): value}."""
    samples = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_and_labels, value = line.rsplit(" ", 1)
        labels = {}
        if "{" in name_and_labels:
            name, rest = name_and_labels.split("{", 1)
            rest = rest.rstrip("}")
            for part in filter(None, _split_labels(rest)):
                key, val = part.split("=", 1)
                labels[key] = val.strip('"')
        else:
            name = name_and_labels
        samples[(name, frozenset(labels.items()))] = float(value)
    return samples


def _split_labels(text):
    parts, current, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def metric(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def wait_requests_in_flight(daemon, count, timeout=30.0):
    """Waits until at least `count` requests other than the scrape itself are in flight
    (their header read, no response yet), as /metrics shows."""
    deadline = time.monotonic() + timeout
    while True:
        samples = parse_metrics(request(daemon, "GET", "/metrics")[2].decode())
        others = metric(samples, "sluice_http_requests_in_flight") - 1  # the scrape counts itself
        if others >= count:
            return
        assert time.monotonic() < deadline, f"{others} of {count} requests in flight"
        time.sleep(0.02)
