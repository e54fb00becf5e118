"""Voice cloning over HTTP against the real daemon: a tiny random Qwen3-TTS Base
checkpoint beside a CustomVoice one. The Base checkpoint is tests/fixtures/qwen3_tts/
base_small with codec_encoder/ as its speech_tokenizer (a folder of links made per
test run): that tiny speech tokenizer holds the same decoder recipe and an encoder with
non-trivial weights, so ICL references have codes that depend on the clip (base_small's
own encoder keeps Mimi's default init and gives code 0 everywhere). The reference is
reference_audio/voice_24k.wav, sent inline (`ref_audio`, base64 or a data: URI) or
uploaded (POST /v1/audio/voices, multipart as `requests` encodes it).

Runs are greedy and short, so the same reference gives the same bytes whichever way it
came: inline == uploaded, streamed == whole (within a few LSB on a GPU), before == after
a restart."""
import base64
import io
import json
import math
import struct
import wave

import pytest
import requests
from openai import OpenAI

from conftest import REPO, Daemon, assert_same_pcm, start_module_daemon
from http_util import assert_openai_error, get_json, post_speech as speech, request

FIXTURES = REPO / "tests" / "fixtures" / "qwen3_tts"
BASE_SMALL = FIXTURES / "base_small"
CUSTOM = FIXTURES / "custom_voice_small"
VOICE_WAV = (FIXTURES / "reference_audio" / "voice_24k.wav").read_bytes()
VOICE_B64 = base64.b64encode(VOICE_WAV).decode()
VOICE_URI = "data:audio/wav;base64," + VOICE_B64
REF_TEXT = "This is the reference speaking."
GREEDY = {"seed": 7, "temperature": 0, "max_new_tokens": 6}
SAMPLES_PER_FRAME = 1920


def base_checkpoint(folder):
    """base_small's files, with codec_encoder/ as its speech_tokenizer (links)."""
    folder.mkdir(exist_ok=True)
    for item in BASE_SMALL.iterdir():
        if item.name != "speech_tokenizer" and not (folder / item.name).exists():
            (folder / item.name).symlink_to(item.resolve())
    if not (folder / "speech_tokenizer").exists():
        (folder / "speech_tokenizer").symlink_to((FIXTURES / "codec_encoder").resolve())
    return folder


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    voices = tmp_path_factory.mktemp("voices")
    base = base_checkpoint(tmp_path_factory.mktemp("checkpoint") / "base")
    daemon = start_module_daemon("--model", f"base={base}", "--model", f"custom={CUSTOM}", "--compute-threads", "1",
                                 "--voices-dir", str(voices))
    daemon.voices_dir = voices
    yield daemon
    daemon.kill()


@pytest.fixture(scope="module")
def client(served):
    return OpenAI(base_url=served.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def pcm(daemon, **fields):
    status, head, body = speech(daemon, {"model": "base", "input": "Hello there.", "response_format": "pcm",
                                         **GREEDY, **fields})
    assert status == 200, body
    frames = int(head["x-sluice-output-tokens"])
    assert 1 <= frames <= GREEDY["max_new_tokens"]
    assert len(body) == frames * SAMPLES_PER_FRAME * 2  # 16-bit mono
    return body


def streamed_pcm(daemon, **fields):
    status, head, body = speech(daemon, {"model": "base", "input": "Hello there.", "response_format": "pcm",
                                         "stream_format": "audio", **GREEDY, **fields})
    assert status == 200, body
    assert head.get("transfer-encoding") == "chunked"
    return body


def upload(daemon, name, audio=VOICE_WAV, mime="audio/wav", **fields):
    form = {"name": name, "consent": "consent-123", **fields}
    return requests.post(daemon.url + "/v1/audio/voices", data=form,
                         files={"audio_sample": ("voice.wav", audio, mime)}, timeout=60)


def delete(daemon, name):
    return requests.delete(daemon.url + f"/v1/audio/voices/{name}", timeout=10)


def wav_bytes(seconds, rate=24000):
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        n = int(seconds * rate)
        w.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i * 0.05))) for i in range(n)))
    return out.getvalue()


def test_inline_reference_with_the_openai_client_x_vector_and_icl(served, client):
    xvec = client.audio.speech.create(model="base", voice="alloy", input="Hello there.", response_format="pcm",
                                      extra_body={"ref_audio": VOICE_URI, "x_vector_only_mode": True, **GREEDY})
    icl = client.audio.speech.create(model="base", voice="alloy", input="Hello there.", response_format="pcm",
                                     extra_body={"ref_audio": VOICE_B64, "ref_text": REF_TEXT, **GREEDY})
    # The client's voice is ignored beside a reference: plain HTTP without one agrees.
    assert xvec.content == pcm(served, ref_audio=VOICE_B64, x_vector_only_mode=True)
    assert icl.content == pcm(served, ref_audio=VOICE_URI, ref_text=REF_TEXT)
    assert xvec.content != icl.content  # ICL adds the reference's codes and transcript to the prompt


@pytest.mark.parametrize("mode", ["x_vector", "icl"])
def test_streamed_clone_is_the_whole_one(served, mode):
    fields = {"ref_audio": VOICE_B64}
    fields.update({"x_vector_only_mode": True} if mode == "x_vector" else {"ref_text": REF_TEXT})
    whole = pcm(served, **fields)
    assert_same_pcm(streamed_pcm(served, **fields), whole)
    # ICL decodes the reference's codes first, then cuts them: the first chunk too.
    assert_same_pcm(streamed_pcm(served, initial_codec_chunk_frames=2, **fields), whole)


def test_an_uploaded_voice_speaks_as_the_same_reference_inline(served):
    created = upload(served, "Ref_ICL", ref_text=REF_TEXT)
    assert created.status_code == 200, created.text
    voice = created.json()
    assert voice["success"] is True
    info = voice["voice"]
    assert info["name"] == "Ref_ICL" and info["consent"] == "consent-123"
    assert info["mime_type"] == "audio/wav" and info["file_size"] == len(VOICE_WAV)
    assert isinstance(info["created_at"], int) and info["model"] == "base"
    assert info["ref_text"] == REF_TEXT and info["x_vector_only_mode"] is False
    # An ICL transcript with x_vector_only_mode (as requests writes True) keeps the embedding alone.
    xvec = upload(served, "ref-xvec", ref_text=REF_TEXT, x_vector_only_mode=True)
    assert xvec.status_code == 200, xvec.text
    assert xvec.json()["voice"]["x_vector_only_mode"] is True and xvec.json()["voice"]["ref_text"] is None

    assert pcm(served, voice="Ref_ICL") == pcm(served, ref_audio=VOICE_B64, ref_text=REF_TEXT)
    assert pcm(served, voice="ref-xvec") == pcm(served, ref_audio=VOICE_B64, x_vector_only_mode=True)
    # An ICL voice used in x-vector mode is the x-vector clone.
    assert pcm(served, voice="Ref_ICL", x_vector_only_mode=True) == pcm(served, voice="ref-xvec")
    assert streamed_pcm(served, voice="Ref_ICL") == pcm(served, voice="Ref_ICL")
    for name in ("Ref_ICL", "ref-xvec"):
        assert delete(served, name).status_code == 200


def test_voices_are_listed_and_deleted(served):
    assert upload(served, "listed", ref_text=REF_TEXT).status_code == 200
    status, _, listing = get_json(served, "/v1/audio/voices")
    assert status == 200
    assert "listed" in listing["voices"]
    assert "serena" in listing["voices"]  # the CustomVoice model's speakers are still there
    uploaded = {v["name"]: v for v in listing["uploaded_voices"]}
    assert uploaded["listed"]["model"] == "base"
    base = next(d for d in listing["data"] if d["model"] == "base")
    assert base["tts_model_type"] == "base" and base["uploaded_voices"] == ["listed"]
    assert (served.voices_dir / "base" / "listed.json").exists()

    removed = delete(served, "listed")
    assert removed.status_code == 200 and removed.json()["success"] is True
    assert not (served.voices_dir / "base" / "listed.json").exists()
    status, _, listing = get_json(served, "/v1/audio/voices?model=base")
    assert "listed" not in listing["voices"]
    again = delete(served, "listed")
    assert again.status_code == 404
    assert_openai_error(again.content, code="voice_not_found", param="name")
    status, _, body = speech(served, {"model": "base", "input": "Hi", "voice": "listed"})
    assert status == 400
    assert_openai_error(body, param="voice")


def test_bad_references_are_refused_naming_the_field(served):
    def refused(fields, param, model="base", contains=None):
        status, _, body = speech(served, {"model": model, "input": "Hi", **GREEDY, **fields})
        assert status == 400, body
        error = assert_openai_error(body, param=param)
        if contains:
            assert contains in error["message"], error
        return error

    not_audio = base64.b64encode(b"these are not samples at all").decode()
    refused({"ref_audio": not_audio, "x_vector_only_mode": True}, "ref_audio")
    refused({"ref_audio": base64.b64encode(wav_bytes(31)).decode(), "x_vector_only_mode": True}, "ref_audio",
            contains="longer than")
    refused({"ref_audio": "https://example.com/voice.wav", "ref_text": REF_TEXT}, "ref_audio", contains="not fetched")
    refused({"ref_audio": "/etc/passwd", "x_vector_only_mode": True}, "ref_audio")
    refused({"ref_audio": "data:text/plain;base64," + VOICE_B64, "x_vector_only_mode": True}, "ref_audio")
    refused({"ref_audio": VOICE_B64}, "ref_text", contains="x_vector_only_mode")  # ICL without its transcript
    refused({}, "ref_audio")  # a Base model needs a reference
    refused({"voice": "nobody"}, "voice")
    refused({"ref_audio": VOICE_B64, "x_vector_only_mode": True, "voice": "serena"}, "ref_audio", model="custom")
    refused({"ref_text": REF_TEXT, "voice": "serena"}, "ref_text", model="custom")
    # The CustomVoice model itself still speaks.
    status, _, body = speech(served, {"model": "custom", "input": "Hi", "voice": "serena", **GREEDY})
    assert status == 200, body


def test_bad_uploads_are_refused_naming_the_field(served):
    def refused(response, status, param=None, code=None):
        assert response.status_code == status, response.text
        assert_openai_error(response.content, param=param, code=code)

    # Multipart without the file (files= with no file name: plain form fields).
    refused(requests.post(served.url + "/v1/audio/voices", files={"name": (None, "a"), "consent": (None, "c")},
                          timeout=10), 400, param="audio_sample")
    refused(upload(served, "no/slash"), 400, param="name")
    refused(upload(served, "x" * 65), 400, param="name")
    refused(requests.post(served.url + "/v1/audio/voices", data={"name": "noconsent"},
                          files={"audio_sample": ("v.wav", VOICE_WAV, "audio/wav")}, timeout=10), 400, param="consent")
    refused(upload(served, "junk", audio=b"not audio", mime="audio/wav"), 400, param="audio_sample")
    refused(upload(served, "longone", audio=wav_bytes(31)), 400, param="audio_sample")
    refused(upload(served, "wrongmodel", model="custom"), 400, param="model")
    refused(upload(served, "badflag", x_vector_only_mode="maybe"), 400, param="x_vector_only_mode")
    status, _, body = request(served, "POST", "/v1/audio/voices", json.dumps({"name": "x"}),
                              {"Content-Type": "application/json"})
    assert status == 400, body
    assert_openai_error(body)
    status, _, body = request(served, "POST", "/v1/audio/voices", b"--B\r\nno headers end",
                              {"Content-Type": "multipart/form-data; boundary=B"})
    assert status == 400 and b"malformed" in body

    assert upload(served, "twice").status_code == 200
    refused(upload(served, "TWICE"), 409, param="name", code="voice_exists")
    assert delete(served, "twice").status_code == 200


def test_voices_survive_a_restart_and_the_store_is_bounded(tmp_path):
    voices = tmp_path / "voices"
    base = base_checkpoint(tmp_path / "base")
    args = ("--model", f"base={base}", "--compute-threads", "1", "--voices-dir", str(voices), "--max-voices", "1")
    first = start_module_daemon(*args)
    try:
        assert upload(first, "kept", ref_text=REF_TEXT).status_code == 200
        full = upload(first, "second")
        assert full.status_code == 409
        assert_openai_error(full.content, code="max_voices_reached")
        before = pcm(first, voice="kept")
    finally:
        first.kill()
    assert (voices / "base" / "kept.json").exists()
    second = start_module_daemon(*args)
    try:
        status, _, listing = get_json(second, "/v1/audio/voices")
        assert listing["voices"] == ["kept"]
        assert pcm(second, voice="kept") == before
        assert pcm(second, voice="kept") == pcm(second, ref_audio=VOICE_B64, ref_text=REF_TEXT)
    finally:
        second.kill()
