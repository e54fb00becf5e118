"""HTTP-layer defects a hostile tester found, each against the real daemon on loopback:
the daemon must answer (or close) and keep serving everyone else."""
import http.client
import json
import os
import select
import socket
import time

from http_util import (assert_openai_error, metric, parse_metrics, raw_exchange, read_until_closed,
                       request)

CHUNKED_POST = b"POST /v1/models HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
STANDARD_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "CONNECT", "TRACE", "PATCH"}


def assert_alive(daemon):
    assert daemon.proc.poll() is None, daemon.log
    assert request(daemon, "GET", "/health")[0] == 200


def test_a_trailer_field_over_64k_is_431_not_a_crash(daemon):
    payload = CHUNKED_POST + b"2\r\n{}\r\n0\r\nX-Trailer: " + b"t" * 70000 + b"\r\n\r\n"
    reply = raw_exchange(daemon.port, payload)
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    assert_alive(daemon)


def test_a_header_field_over_64k_under_a_raised_limit_is_431_not_a_crash(start_daemon):
    daemon = start_daemon("--max-header-bytes", "200000")
    payload = b"GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n"
    reply = raw_exchange(daemon.port, payload)
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    assert_alive(daemon)


def test_trailers_count_against_the_header_limit(daemon):
    # 40 trailers of 1 KB: each is small, together they are over the 16 KiB default.
    trailers = b"".join(b"X-T%d: %s\r\n" % (i, b"v" * 1000) for i in range(40))
    reply = raw_exchange(daemon.port, CHUNKED_POST + b"2\r\n{}\r\n0\r\n" + trailers + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    assert_openai_error(reply.split(b"\r\n\r\n", 1)[1], code="header_too_large")
    # A few small trailers are fine: routing decides (405: /v1/models is GET only).
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(CHUNKED_POST + b"2\r\n{}\r\n0\r\nX-Sum: 1\r\n\r\n")
        assert sock.recv(65536).startswith(b"HTTP/1.1 405")


def test_invented_methods_and_paths_add_no_metric_series(daemon):
    for i in range(30):
        raw_exchange(daemon.port, b"FOO%d /invented/%d HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
                     % (i, i))
    status, _, body = request(daemon, "GET", "/metrics")
    assert status == 200
    samples = parse_metrics(body.decode())
    methods, routes = set(), set()
    for name, labels in samples:
        if name.startswith("sluice_http_request"):
            labels = dict(labels)
            methods.add(labels.get("method"))
            routes.add(labels.get("route"))
    methods.discard(None)
    routes.discard(None)
    assert "OTHER" in methods
    assert methods <= STANDARD_METHODS | {"OTHER", "-"}, methods
    assert not any("invented" in route for route in routes), routes
    assert metric(samples, "sluice_http_requests_total", route="unmatched", method="OTHER",
                  status="404") == 30


def test_silent_connections_time_out_from_accept(start_daemon):
    # The header timeout (1 s) runs from accept; the idle timeout (600 s) and the 30 s
    # each socket waits are both far beyond it.
    daemon = start_daemon("--max-connections", "4", "--header-timeout-s", "1",
                          "--idle-timeout-s", "600")
    silent = [socket.create_connection(("127.0.0.1", daemon.port), timeout=30) for _ in range(4)]
    try:
        for sock in silent:
            assert sock.recv(1) == b""  # closed by the server (a timeout here raises)
        assert request(daemon, "GET", "/health")[0] == 200
    finally:
        for sock in silent:
            sock.close()


def test_a_kept_alive_connection_still_gets_the_idle_timeout(start_daemon):
    daemon = start_daemon("--header-timeout-s", "0.5", "--idle-timeout-s", "60")
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=5)
    try:
        conn.request("GET", "/health")
        assert conn.getresponse().read()
        time.sleep(1.0)  # past the header timeout, well inside the idle one
        conn.request("GET", "/health")
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_deeply_nested_json_is_400(daemon):
    levels = 100_000
    body = b'{"model":"tiny","prompt":' + b"[" * levels + b"1" + b"]" * levels + b"}"
    status, _, raw = request(daemon, "POST", "/tokenize", body=body,
                             headers={"Content-Type": "application/json"})
    assert status == 400
    error = assert_openai_error(raw)
    assert "levels deep" in error["message"], error
    assert_alive(daemon)


def test_sse_to_an_http_1_0_client_is_close_delimited(daemon):
    body = json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 4, "temperature": 0,
                       "stream": True}).encode()
    payload = (b"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n" % len(body)) + body
    reply = raw_exchange(daemon.port, payload, timeout=30)
    head, _, events = reply.partition(b"\r\n\r\n")
    lines = head.decode().lower().split("\r\n")
    assert lines[0].startswith("http/1.0 200") or lines[0].startswith("http/1.1 200"), lines
    assert not any(line.startswith("transfer-encoding") for line in lines), lines
    assert "connection: close" in lines, lines
    assert "content-type: text/event-stream" in lines, lines
    # The raw events, no chunk sizes, up to the close.
    assert events.startswith(b"data: {"), events[:100]
    assert events.endswith(b"data: [DONE]\n\n"), events[-100:]


def test_head_answers_wherever_get_does(daemon):
    for path in ["/health", "/ready", "/v1/models", "/v1/models/tiny"]:
        get_status, get_headers, get_body = request(daemon, "GET", path)
        head_status, head_headers, head_body = request(daemon, "HEAD", path)
        assert head_status == get_status, path
        assert head_body == b"", path
        assert head_headers["content-type"] == get_headers["content-type"], path
        assert int(head_headers["content-length"]) == len(get_body), path
    status, headers, body = request(daemon, "HEAD", "/metrics")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0
    # Errors too come without their body.
    status, headers, body = request(daemon, "HEAD", "/nope")
    assert status == 404 and body == b"" and int(headers["content-length"]) > 0
    # On the wire: nothing after the header, and the connection serves the next request.
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
        sock.sendall(b"HEAD /health HTTP/1.1\r\nHost: t\r\n\r\n"
                     b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        reply = read_until_closed(sock)
    first, _, rest = reply.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 200"), reply[:200]
    assert rest.startswith(b"HTTP/1.1 200"), rest[:200]


def open_fds(daemon):
    return len(os.listdir(f"/proc/{daemon.proc.pid}/fd"))


def test_pipelined_garbage_then_close_neither_crashes_nor_leaks(daemon):
    assert_alive(daemon)
    fds_before = open_fds(daemon)
    requests = [b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n",
                b"POST /v1/models HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}",
                CHUNKED_POST + b"2\r\n{}\r\n0\r\n\r\n"]
    for i in range(30):
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=5) as sock:
            sock.sendall(requests[i % len(requests)] + b"X")  # one byte of a next request
            sock.shutdown(socket.SHUT_WR)
            reply = read_until_closed(sock)
        assert reply.startswith(b"HTTP/1.1 200") or reply.startswith(b"HTTP/1.1 405"), reply[:200]
    # Every one of those connections is closed and forgotten.
    deadline = time.monotonic() + 30
    while True:
        samples = parse_metrics(request(daemon, "GET", "/metrics")[2].decode())
        open_now = metric(samples, "sluice_http_connections_open")
        if (open_now <= 1 and open_fds(daemon) <= fds_before) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert open_now <= 1  # the scrape's own connection
    assert open_fds(daemon) <= fds_before
    assert_alive(daemon)


def test_a_header_sent_in_pieces_counts_whole_against_the_limit(daemon):
    # Beast parses a field once the next line's first byte shows it is not folded,
    # takes it, and holds back only the rest: pieces that end one byte into a field
    # left a byte pending, and the header grew without bound (50 MB in the report).
    fields = (b"X-Pad: " + b"p" * 91 + b"\r\n") * 2400  # 240 KB, never ended: 15 times the limit
    piece = 4000  # 40 fields of 100 bytes
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: t\r\n" + fields[:1])
        for start in range(1, len(fields) - piece, piece):
            try:
                sock.sendall(fields[start:start + piece])
            except (BrokenPipeError, ConnectionResetError):
                break  # the server answered and closed; the answer is still to be read
            # Pieces apart (so that the server reads each on its own), until the answer shows.
            if select.select([sock], [], [], 0.2)[0]:
                break
        sock.settimeout(30)
        try:
            reply = sock.recv(65536)  # what arrived before any reset is still read
        except ConnectionResetError:
            reply = b""
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    assert_openai_error(reply.split(b"\r\n\r\n", 1)[1], code="header_too_large")
    assert_alive(daemon)


def test_a_transfer_coding_other_than_chunked_is_501(daemon):
    for coding in [b"gzip, chunked", b"deflate,chunked", b"chunked;x=1, gzip"]:
        reply = raw_exchange(daemon.port, b"POST /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n"
                             b"Transfer-Encoding: " + coding + b"\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 501"), (coding, reply[:200])
        assert_openai_error(reply.split(b"\r\n\r\n", 1)[1], code="unsupported_transfer_encoding")
    # Plain chunked is read as before: routing decides (405: /v1/models is GET only).
    reply = raw_exchange(daemon.port, CHUNKED_POST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
                         + b"2\r\n{}\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 405"), reply[:200]


def test_probes_answer_while_idle_sockets_hold_every_slot(start_daemon):
    # The hostile case in small: more silent sockets than max_connections and the
    # probe slots together (1,100 against 1,024 in production).
    daemon = start_daemon("--max-connections", "8", "--probe-connections", "4", "--header-timeout-s", "60")
    silent = [socket.create_connection(("127.0.0.1", daemon.port), timeout=10) for _ in range(20)]
    try:
        for _ in range(10):
            status, _, body = request(daemon, "GET", "/health")
            assert status == 200, body
        assert request(daemon, "GET", "/ready")[0] == 200
        assert request(daemon, "GET", "/metrics")[0] == 200
        # Anything else over the cap is still refused.
        status, headers, body = request(daemon, "GET", "/v1/models")
        assert status == 503 and headers.get("retry-after") == "1"
        assert_openai_error(body, code="too_many_connections")
    finally:
        for sock in silent:
            sock.close()


def test_max_connections_per_address_caps_one_client(start_daemon):
    daemon = start_daemon("--max-connections-per-address", "2", "--header-timeout-s", "60")
    held = [socket.create_connection(("127.0.0.1", daemon.port), timeout=10) for _ in range(2)]
    try:
        status, _, body = request(daemon, "GET", "/v1/models")
        assert status == 503, body
        assert_openai_error(body, code="too_many_connections")
        assert request(daemon, "GET", "/health")[0] == 200  # probes still get through
    finally:
        for sock in held:
            sock.close()
