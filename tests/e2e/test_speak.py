"""`sluice speak`: a Qwen3-TTS checkpoint folder -> an audio file, end to end through the
real binary (tokenizer, prompt, talker, code predictor, streamed codec decoder,
libsndfile). On the tiny fixtures the greedy audio must be the official package's
waveform for the same text, speaker, language and instructions
(tests/fixtures/qwen3_tts/talker_golden, made by make_fixtures.py). The long runs
(custom_voice_wide, up to 96 frames) keep no waveform: their per-frame RMS is compared."""
import json
import os
import struct
import subprocess
import wave
from pathlib import Path

import pytest

from conftest import REPO, SLUICE_BIN

FIXTURES = REPO / "tests" / "fixtures" / "qwen3_tts"
SAMPLES_PER_FRAME = 1920
# The codec's parity with the official decoder is 1e-4 relative (unit tests); the WAV
# holds 16-bit samples, so one step of 1/32768 more.
WAVE_TOLERANCE = 2e-3


def speak(*args, timeout=120):
    if not SLUICE_BIN.exists():
        pytest.fail(f"{SLUICE_BIN} is missing: build first (make build)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
    return subprocess.run([str(SLUICE_BIN), "speak", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def read_wav(path):
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 24000)
        raw = w.readframes(w.getnframes())
    return [v / 32768.0 for v in struct.unpack(f"<{len(raw) // 2}h", raw)]


def golden_cases():
    for case_json in sorted((FIXTURES / "talker_golden").glob("*/*/case.json")):
        yield pytest.param(case_json, id=f"{case_json.parent.parent.name}/{case_json.parent.name}")


@pytest.mark.parametrize("case_json", golden_cases())
def test_greedy_speech_is_the_official_waveform(case_json, tmp_path):
    case = json.loads(case_json.read_text())
    args = case["args"]
    out = tmp_path / "out.wav"
    command = ["--model", FIXTURES / case_json.parent.parent.name, "--text", args["text"], "--temperature", 0,
               "--max-frames", args["max_new_tokens"] - 1, "--out", out, "--stats"]
    if args.get("speaker"):
        command += ["--voice", args["speaker"]]
    if args.get("language"):
        command += ["--language", args["language"]]
    if args.get("instruct"):
        command += ["--instructions", args["instruct"]]
    result = speak(*command)
    assert result.returncode == 0, result.stderr
    # An EOS the official package samples at step max_new_tokens - 1 comes after the
    # last frame it can make: sluice ends on the frame limit one step earlier.
    max_frames = args["max_new_tokens"] - 1
    reason = "stop" if case["stop"] == "eos" and case["frames"] < max_frames else "length"
    assert f"frames:           {case['frames']} ({reason})" in result.stderr

    samples = read_wav(out)
    assert len(samples) == case["frames"] * SAMPLES_PER_FRAME
    if "frame_rms" in case:
        # A long run: one code off changes its frame's RMS by far more than rounding.
        for frame, want in enumerate(case["frame_rms"]):
            chunk = samples[frame * SAMPLES_PER_FRAME:(frame + 1) * SAMPLES_PER_FRAME]
            got = (sum(v * v for v in chunk) / len(chunk)) ** 0.5
            assert abs(got - want) <= WAVE_TOLERANCE, f"frame {frame}: RMS {got} where the official has {want}"
        return
    golden = struct.unpack(f"<{case['frames'] * SAMPLES_PER_FRAME}f",
                           (case_json.parent / "waveform.bin").read_bytes())
    worst = max(abs(a - b) for a, b in zip(samples, golden))
    assert worst <= WAVE_TOLERANCE, f"largest sample difference {worst}"


def test_stats_report_every_stage(tmp_path):
    result = speak("--model", FIXTURES / "custom_voice_small", "--text", "Hello world.", "--voice", "ryan",
                   "--seed", 7, "--max-frames", 5, "--out", tmp_path / "a.flac", "--stats")
    assert result.returncode == 0, result.stderr
    for line in ("frames:", "audio:", "talker:", "code predictor:", "codec decoder:", "first audio:",
                 "real-time factor:"):
        assert line in result.stderr
    assert (tmp_path / "a.flac").stat().st_size > 0


def test_bad_requests_and_checkpoints_fail_with_a_clear_message(tmp_path):
    out = tmp_path / "x.wav"
    unknown_voice = speak("--model", FIXTURES / "custom_voice_small", "--text", "Hi", "--voice", "nobody",
                          "--out", out)
    assert unknown_voice.returncode == 2 and "voice" in unknown_voice.stderr
    empty = speak("--model", FIXTURES / "custom_voice_small", "--text", "", "--out", out)
    assert empty.returncode == 2, empty.stderr
    base = tmp_path / "base"
    base.mkdir()
    (base / "config.json").write_bytes((FIXTURES / "base_config" / "config.json").read_bytes())
    refused = speak("--model", base, "--text", "Hi", "--out", out)
    assert refused.returncode == 1 and "config.json" in refused.stderr and "voice-clone" in refused.stderr.lower()
    assert not out.exists()


def test_bench_tts_on_a_checkpoint_folder(tmp_path):
    out = tmp_path / "bench.json"
    args = ["--tts", FIXTURES / "custom_voice_small", "--tts-frames", 6, "--backend", "cpu", "--json", out]
    result = subprocess.run([str(SLUICE_BIN), "bench", *map(str, args)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(out.read_text())
    assert report["frames"] == 6  # EOS ignored: the run makes exactly the frames asked for
    assert report["audio_seconds"] == pytest.approx(6 * 0.08)
    for key in ("talker_ms_per_frame", "predictor_ms_per_frame", "decoder_ms_per_frame", "first_audio_ms",
                "real_time_factor"):
        assert report[key] > 0, key
