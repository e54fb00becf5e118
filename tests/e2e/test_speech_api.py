"""POST /v1/audio/speech and GET /v1/audio/voices against the real daemon serving the
tiny random Qwen3-TTS fixture (speakers serena, ryan, eric, dylan) beside a text model.

Runs are short and deterministic: a seed, temperature 0 and a few frames
(max_new_tokens). A frame is 80 ms at 24 kHz = 1920 samples. Every response is decoded
by an independent decoder: PyAV (FFmpeg's decoders, not sluice's encoders' code) for the
containers, the bytes themselves for pcm. Lossless formats (pcm, wav, flac) must hold
exactly frames x 1920 samples; the lossy ones (mp3, aac, opus) the same within one model
frame (1920 samples at 24 kHz, 80 ms), which covers their codec padding (an MP3 frame of
576/1152 samples, AAC's 1024 plus priming, Opus's 20 ms frames and pre-skip).
"""
import base64
import http.client
import io
import json
import signal
import socket
import threading
import time

import av
import pytest
from openai import OpenAI

from conftest import DEFAULT_MODEL, REPO, TINY_MODEL, assert_same_pcm, start_module_daemon
from http_util import assert_openai_error, get_json, post_speech as speech, metric, parse_metrics, request

TTS_FIXTURE = REPO / "tests" / "fixtures" / "qwen3_tts" / "custom_voice_small"
SAMPLES_PER_FRAME = 1920
RATE = 24000
FORMATS = ["mp3", "opus", "aac", "flac", "wav", "pcm"]
LOSSLESS = {"pcm", "wav", "flac"}
CONTAINER = {"mp3": "mp3", "opus": "ogg", "aac": "aac", "flac": "flac", "wav": "wav"}
# Short and deterministic: the same seed gives the same audio every time.
SHORT = {"seed": 7, "temperature": 0, "max_new_tokens": 6}


def text_model():
    # The default model when it is there (`make model`), else the tiny text fixture.
    return DEFAULT_MODEL if DEFAULT_MODEL.exists() else TINY_MODEL


@pytest.fixture(scope="module")
def served():
    # One compute thread per backend: three backends (talker, codec, text) share two cores.
    daemon = start_module_daemon("--model", f"tts={TTS_FIXTURE}", "--model", f"text={text_model()}",
                                 "--compute-threads", "1")
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=30)


def decode(data, fmt):
    """(samples, sample rate, channels) as an independent decoder reads them."""
    if fmt == "pcm":  # raw 16-bit little-endian mono
        assert len(data) % 2 == 0
        return len(data) // 2, RATE, 1
    container = av.open(io.BytesIO(data), format=CONTAINER[fmt])
    stream = container.streams.audio[0]
    samples = sum(frame.samples for frame in container.decode(stream))
    rate = stream.codec_context.sample_rate
    channels = stream.codec_context.channels
    container.close()
    if fmt == "opus":
        # Opus decoders always run at 48 kHz; the rate encoded is the OpusHead's input rate.
        head = data.index(b"OpusHead")
        assert int.from_bytes(data[head + 12:head + 16], "little") == RATE
        samples, rate = samples * RATE // stream.codec_context.sample_rate, RATE
    return samples, rate, channels


def check_audio(data, fmt, frames, speed=1.0):
    samples, rate, channels = decode(data, fmt)
    assert rate == RATE and channels == 1, (fmt, rate, channels)
    expected = round(frames * SAMPLES_PER_FRAME / speed)
    tolerance = 0 if fmt in LOSSLESS and speed == 1.0 else SAMPLES_PER_FRAME
    assert abs(samples - expected) <= tolerance, (fmt, samples, expected)


def whole(daemon, fmt="pcm", **extra):
    status, head, body = speech(daemon, {"model": "tts", "input": "Hello there.", "voice": "serena",
                                         "response_format": fmt, **SHORT, **extra})
    assert status == 200, body
    return head, body


def sse_events(body):
    events = []
    for block in body.decode().split("\n\n"):
        if block.strip():
            assert block.startswith("data: "), block
            events.append(json.loads(block[len("data: "):]))
    return events


@pytest.mark.parametrize("fmt", FORMATS)
def test_openai_client_whole_and_streamed_for_every_format(served, client, fmt):
    head, reference = whole(served, fmt)
    frames = int(head["x-sluice-output-tokens"])
    assert 1 <= frames <= SHORT["max_new_tokens"]
    assert int(head["x-sluice-input-tokens"]) > 0

    created = client.audio.speech.create(model="tts", voice="coral", input="Hello there.", response_format=fmt,
                                         extra_body=SHORT)
    check_audio(created.content, fmt, frames)
    if fmt != "opus":  # Ogg picks a random stream serial number per stream
        assert created.content == reference  # coral is serena: the same voice, the same seed

    with client.audio.speech.with_streaming_response.create(
            model="tts", voice="serena", input="Hello there.", response_format=fmt, stream_format="audio",
            extra_body=SHORT) as response:
        assert response.headers["transfer-encoding"] == "chunked"
        streamed = b"".join(response.iter_bytes())
    check_audio(streamed, fmt, frames)
    if fmt == "pcm":
        assert_same_pcm(streamed, reference)


def test_a_06b_checkpoint_says_it_ignored_the_instructions(served):
    head, with_instructions = whole(served, "pcm", instructions="Speak slowly and warmly.")
    assert head["x-sluice-instructions-ignored"] == "true"
    head, without = whole(served, "pcm")
    assert "x-sluice-instructions-ignored" not in head
    assert with_instructions == without
    assert head["x-request-id"]


def test_speed_changes_the_duration_not_the_rate(served):
    head, body = whole(served, "wav", speed=2.0)
    check_audio(body, "wav", int(head["x-sluice-output-tokens"]), speed=2.0)


def test_sse_deltas_add_up_to_the_whole_pcm(served, client):
    head, reference = whole(served, "pcm")
    with client.audio.speech.with_streaming_response.create(
            model="tts", voice="serena", input="Hello there.", response_format="pcm", stream_format="sse",
            extra_body=SHORT) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = sse_events(response.read())
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert len(events) >= 2
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert pcm == reference
    done = events[-1]
    assert done["type"] == "speech.audio.done"
    usage = done["usage"]
    assert usage["output_tokens"] == int(head["x-sluice-output-tokens"])
    assert usage["input_tokens"] == int(head["x-sluice-input-tokens"])
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize("body, param", [
    ({"input": ""}, "input"),
    ({"input": "a" * 4097}, "input"),
    ({"voice": "marvin"}, "voice"),
    ({"voice": "alloy"}, "voice"),  # alloy is vivian, whom this checkpoint lacks
    ({"speed": 5}, "speed"),
    ({"response_format": "ogg"}, "response_format"),
    ({"model": "text"}, "model"),
])
def test_bad_input_is_400_naming_the_param(served, body, param):
    status, _, raw = speech(served, {"model": "tts", "input": "Hi.", "voice": "serena", **body})
    assert status == 400, raw
    error = assert_openai_error(raw, param=param)
    if param == "voice":  # the message lists what there is
        assert "serena" in error["message"] and "coral" in error["message"]


def test_text_routes_refuse_the_speech_model(served):
    status, _, raw = request(served, "POST", "/v1/completions", json.dumps({"model": "tts", "prompt": "Hi"}),
                             {"Content-Type": "application/json"})
    assert status == 400
    error = assert_openai_error(raw, param="model")
    assert "/v1/audio/speech" in error["message"]


def test_voices_lists_speakers_and_openai_aliases(served):
    status, _, body = get_json(served, "/v1/audio/voices")
    assert status == 200
    assert {"serena", "ryan", "eric", "dylan", "coral", "ash", "verse", "fable"} <= set(body["voices"])
    assert "alloy" not in body["voices"]
    (model,) = body["data"]
    assert model["model"] == "tts" and model["tts_model_type"] == "custom_voice"
    assert model["speakers"] == ["dylan", "eric", "ryan", "serena"]
    assert model["aliases"]["coral"] == "serena"
    status, _, body = get_json(served, "/v1/audio/voices?model=tts")
    assert status == 200 and body["data"][0]["model"] == "tts"
    status, _, raw = request(served, "GET", "/v1/audio/voices?model=text")
    assert status == 400
    assert_openai_error(raw, param="model")


def test_models_lists_both_kinds(served):
    status, _, body = get_json(served, "/v1/models")
    assert status == 200
    kinds = {m["id"]: m["meta"]["kind"] for m in body["data"]}
    assert kinds == {"tts": "speech", "text": "text"}
    tts = next(m for m in body["data"] if m["id"] == "tts")
    assert tts["meta"]["architecture"] == "qwen3_tts"


def tts_metrics(daemon):
    status, _, body = request(daemon, "GET", "/metrics")
    assert status == 200
    samples = parse_metrics(body.decode())
    return (metric(samples, "sluice_kv_cache_usage_perc", model_name="tts"),
            metric(samples, "sluice_num_requests_running", model_name="tts"))


def test_disconnect_mid_stream_frees_the_kv(served):
    body = json.dumps({"model": "tts", "input": "A long story.", "voice": "ryan", "response_format": "pcm",
                       "stream_format": "audio", "seed": 1, "max_new_tokens": 8000, "ignore_eos": True}).encode()
    sock = socket.create_connection(("127.0.0.1", served.port), timeout=10)
    sock.sendall(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    received = b""
    while len(received) < 4 * SAMPLES_PER_FRAME * 2:  # a few frames of audio
        chunk = sock.recv(65536)
        assert chunk, received
        received += chunk
    assert received.startswith(b"HTTP/1.1 200")
    usage, running = tts_metrics(served)
    assert usage > 0 and running == 1  # the stream holds KV while it runs
    sock.close()
    deadline = time.monotonic() + 30
    while tts_metrics(served) != (0.0, 0.0):
        assert time.monotonic() < deadline, tts_metrics(served)
        time.sleep(0.1)
    assert "sluice_speech_requests_total" in request(served, "GET", "/metrics")[2].decode()


def test_speech_and_text_at_once_both_complete(served, client):
    results = {}

    def speak():
        results["speech"] = speech(served, {"model": "tts", "input": "Hello there.", "voice": "serena",
                                            "response_format": "pcm", "stream_format": "audio", **SHORT})

    def complete():
        results["text"] = request(served, "POST", "/v1/completions",
                                  json.dumps({"model": "text", "prompt": "The sky is", "max_tokens": 8,
                                              "temperature": 0}),
                                  {"Content-Type": "application/json"}, timeout=30)

    threads = [threading.Thread(target=speak), threading.Thread(target=complete)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    _, reference = whole(served, "pcm")
    status, _, audio = results["speech"]
    assert status == 200 and audio == reference
    status, _, raw = results["text"]
    assert status == 200, raw
    choice = json.loads(raw)["choices"][0]
    assert choice["text"] and choice["finish_reason"] in ("length", "stop")


def test_a_deadline_ends_the_sse_stream_with_an_error_event(start_daemon):
    # The deadline must pass after the first audio and before the 8000th frame: the
    # first frame takes milliseconds when idle, 3 s leaves room for ASan on a loaded
    # machine, and 8000 frames take the tiny model far longer.
    daemon = start_daemon("--model", f"tts={TTS_FIXTURE}", "--request-timeout-s", "3", model=None)
    status, head, raw = speech(daemon, {"model": "tts", "input": "A long story.", "voice": "ryan",
                                        "response_format": "pcm", "stream_format": "sse", "seed": 1,
                                        "max_new_tokens": 8000, "ignore_eos": True}, timeout=30)
    assert status == 200
    events = sse_events(raw)
    assert events[0]["type"] == "speech.audio.delta"
    assert events[-1]["type"] == "error", events[-1]
    assert events[-1]["error"]["code"] == "timeout"
    assert all(e["type"] == "speech.audio.delta" for e in events[:-1])


def test_a_whole_response_is_bounded_by_max_speech_body_bytes(start_daemon):
    limit = 65536
    daemon = start_daemon("--model", f"tts={TTS_FIXTURE}", "--max-speech-body-bytes", str(limit),
                          "--compute-threads", "1", model=None)
    body = {"model": "tts", "input": "A long story.", "voice": "ryan", "seed": 1, "ignore_eos": True}
    # Lossless: the size follows from the frames, so 40 frames of pcm (153,600 bytes) are refused up front.
    status, _, raw = speech(daemon, {**body, "response_format": "pcm", "max_new_tokens": 40})
    assert status == 400
    error = assert_openai_error(raw, param="max_new_tokens")
    assert "stream_format" in error["message"] and "at most" in error["message"]
    # Lossy: known only as it is made; 150 frames of 64 kbit/s mp3 (~96 KB) grow past the limit.
    status, _, raw = speech(daemon, {**body, "response_format": "mp3", "max_new_tokens": 150})
    assert status == 400
    assert_openai_error(raw, param="stream_format")
    # Streamed, the same audio has no such limit.
    status, _, audio = speech(daemon, {**body, "response_format": "mp3", "max_new_tokens": 150,
                                       "stream_format": "audio"})
    assert status == 200 and len(audio) > limit
    # Within the limit, whole responses are as before.
    status, _, audio = speech(daemon, {**body, "response_format": "pcm", "max_new_tokens": 10})
    assert status == 200 and len(audio) == 10 * SAMPLES_PER_FRAME * 2
    # The cut-off request freed its KV.
    deadline = time.monotonic() + 30
    while tts_metrics(daemon) != (0.0, 0.0):
        assert time.monotonic() < deadline, tts_metrics(daemon)
        time.sleep(0.1)


def test_voice_design_takes_instructions_and_openai_names_only(start_daemon):
    daemon = start_daemon("--model", f"vd={TTS_FIXTURE.parent / 'voice_design_wide'}", model=None)
    body = {"model": "vd", "input": "Hi.", "response_format": "pcm", "temperature": 0, "max_new_tokens": 4,
            "instructions": "A calm, deep voice."}
    status, head, described = speech(daemon, {**body, "voice": "alloy"})  # the official client always sends one
    assert status == 200, described
    assert "x-sluice-instructions-ignored" not in head  # a 1.7B checkpoint uses them
    status, _, raw = speech(daemon, {**body, "voice": "serena"})
    assert status == 400
    assert_openai_error(raw, param="voice")
    status, _, voices = get_json(daemon, "/v1/audio/voices")
    assert voices["data"][0]["speakers"] == [] and voices["data"][0]["default"] is None


def test_sigterm_lets_a_speech_stream_finish_its_audio(start_daemon):
    # Graceful drain: a stream in flight at SIGTERM runs to its last frame, then the
    # daemon exits 0. The signal follows the first chunk (a frame or two), so it lands
    # mid-stream; 60 frames take the tiny model a fraction of a second when idle, and
    # a minute or more on a loaded 2-core machine under ASan: the grace period (600 s)
    # only bounds a failing run.
    frames = 60
    daemon = start_daemon("--model", f"tts={TTS_FIXTURE}", "--shutdown-grace-s", "600", model=None)
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=30)
    conn.request("POST", "/v1/audio/speech", json.dumps(
        {"model": "tts", "input": "Keep talking.", "voice": "ryan", "response_format": "pcm",
         "stream_format": "audio", "seed": 3, "max_new_tokens": frames, "ignore_eos": True}),
        {"Content-Type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200
    first = response.read1(65536)
    assert first
    daemon.signal(signal.SIGTERM)
    rest = response.read()
    conn.close()
    assert len(first) + len(rest) == frames * SAMPLES_PER_FRAME * 2
    assert daemon.wait_exit(timeout=60) == 0
    assert "all connections drained" in daemon.log
