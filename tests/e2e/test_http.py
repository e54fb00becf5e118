"""HTTP behaviour of the real daemon: routes, errors, middleware, keep-alive."""
import http.client
import json
import socket
import threading

from http_util import assert_openai_error, get_json, raw_exchange, request


def test_health_answers_with_a_request_id(daemon):
    status, headers, body = request(daemon, "GET", "/health")
    assert status == 200
    assert json.loads(body) == {"status": "ok"}
    assert headers["x-request-id"].startswith("req-")
    assert headers["content-type"] == "application/json"


def test_client_request_id_is_echoed_and_logged(daemon):
    status, headers, _ = request(daemon, "GET", "/health", headers={"X-Request-Id": "trace-42"})
    assert status == 200
    assert headers["x-request-id"] == "trace-42"
    daemon.wait_for_log(r'"GET /health" 200 .* id=trace-42', timeout=5)


def test_keep_alive_reuses_one_connection(daemon):
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=5)
    try:
        ports = set()
        for path in ["/health", "/v1/models", "/ready", "/metrics", "/health"]:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            assert response.status == 200
            assert response.getheader("Connection", "").lower() != "close"
            ports.add(conn.sock.getsockname()[1])
        assert len(ports) == 1
    finally:
        conn.close()


def test_unknown_route_is_404_in_openai_shape(daemon):
    status, _, body = request(daemon, "GET", "/v1/nothing-here")
    assert status == 404
    assert_openai_error(body, code="not_found")


def test_wrong_method_is_405_with_allow(daemon):
    status, headers, body = request(daemon, "POST", "/health", body=b"{}")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    assert_openai_error(body, code="method_not_allowed")


def test_models_list_and_lookup(daemon):
    status, _, body = get_json(daemon, "/v1/models")
    assert status == 200
    assert body["object"] == "list"
    [model] = body["data"]
    assert model["id"] == "tiny"
    assert model["object"] == "model"
    assert model["owned_by"]
    assert isinstance(model["created"], int) and model["created"] > 1_600_000_000
    assert model["context_length"] == 256
    assert model["meta"]["architecture"] == "llama"

    status, _, one = get_json(daemon, "/v1/models/tiny")
    assert status == 200 and one == model

    status, _, raw = request(daemon, "GET", "/v1/models/gpt-5")
    assert status == 404
    assert_openai_error(raw, code="model_not_found", param="model")


def test_ready_once_models_are_registered(daemon):
    status, _, body = get_json(daemon, "/ready")
    assert status == 200
    assert body["models"] == ["tiny"]


def test_api_keys(start_daemon):
    daemon = start_daemon("--api-keys", "k1,k2")
    status, headers, body = request(daemon, "GET", "/v1/models")
    assert status == 401
    assert headers["www-authenticate"] == "Bearer"
    assert_openai_error(body, code="invalid_api_key")
    status, _, _ = request(daemon, "GET", "/v1/models", headers={"Authorization": "Bearer k3"})
    assert status == 401
    status, _, _ = request(daemon, "GET", "/v1/models", headers={"Authorization": "Bearer k2"})
    assert status == 200
    for open_path in ["/health", "/ready", "/metrics"]:
        assert request(daemon, "GET", open_path)[0] == 200


def test_body_over_the_limit_is_413(start_daemon):
    daemon = start_daemon("--max-body-bytes", "1024")
    status, _, body = request(daemon, "POST", "/v1/models", body=b"x" * 2000,
                              headers={"Content-Type": "application/json"})
    assert status == 413
    assert_openai_error(body, code="payload_too_large")

    # Chunked: no Content-Length up front, so the limit trips while reading.
    chunk = b"x" * 800
    payload = (b"POST /v1/models HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"%x\r\n" % len(chunk) + chunk + b"\r\n"
               + b"%x\r\n" % len(chunk) + chunk + b"\r\n0\r\n\r\n")
    reply = raw_exchange(daemon.port, payload)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]

    # Under the limit the body is read and routing decides: 405 here.
    assert request(daemon, "POST", "/v1/models", body=b"x" * 100)[0] == 405


def test_expect_100_continue(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n"
                     b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
        interim = sock.recv(4096)
        assert interim.startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"{}")
        rest = b""
        while chunk := sock.recv(65536):
            rest += chunk
        assert rest.startswith(b"HTTP/1.1 200"), rest[:200]


def test_cors_preflight_and_simple_request(start_daemon):
    daemon = start_daemon("--cors-origins", "https://app.example", "--api-keys", "k")
    headers = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    status, head, _ = request(daemon, "OPTIONS", "/v1/models", headers=headers)
    assert status == 204
    assert head["access-control-allow-origin"] == "https://app.example"
    assert "POST" in head["access-control-allow-methods"]
    assert head["access-control-allow-headers"] == "authorization, content-type"
    assert int(head["access-control-max-age"]) > 0

    status, _, body = request(daemon, "OPTIONS", "/v1/models",
                              headers={**headers, "Origin": "https://evil.example"})
    assert status == 403
    assert_openai_error(body)

    status, head, _ = request(daemon, "GET", "/health", headers={"Origin": "https://app.example"})
    assert status == 200
    assert head["access-control-allow-origin"] == "https://app.example"
    assert "x-request-id" in head["access-control-expose-headers"].lower()


def test_malformed_request_is_400(daemon):
    reply = raw_exchange(daemon.port, b"THIS IS NOT HTTP\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    body = reply.split(b"\r\n\r\n", 1)[1]
    assert_openai_error(body)


def test_huge_header_is_431(daemon):
    payload = b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 40000 + b"\r\n\r\n"
    reply = raw_exchange(daemon.port, payload)
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]


def test_many_concurrent_clients(daemon):
    results = []
    lock = threading.Lock()

    def client():
        conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
        for _ in range(10):
            conn.request("GET", "/v1/models")
            response = conn.getresponse()
            response.read()
            with lock:
                results.append(response.status)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [200] * 160


def test_connection_cap_turns_extra_clients_away(start_daemon):
    daemon = start_daemon("--max-connections", "2")
    held = [socket.create_connection(("127.0.0.1", daemon.port), timeout=5) for _ in range(2)]
    try:
        # Make sure both are registered as open before the third arrives.
        for sock in held:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        # Over the cap a connection may still make one probe (/health, /ready,
        # /metrics); anything else is turned away.
        reply = raw_exchange(daemon.port, b"GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 503"), reply[:200]
        assert b"too_many_connections" in reply
    finally:
        for sock in held:
            sock.close()
