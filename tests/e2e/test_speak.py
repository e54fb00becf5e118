"""`sluice speak`: a Qwen3-TTS checkpoint folder -> an audio file, end to end through the
real binary (tokenizer, prompt, talker, code predictor, streamed codec decoder,
libsndfile; for Base voice clones the reference file's decoding, resampling and speaker
encoder first). On the tiny fixtures the greedy audio must be the official package's
waveform for the same text, speaker, language, instructions and reference audio
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
    if args.get("ref_audio"):
        # A Base voice clone: the reference file itself, decoded, mixed to mono and
        # resampled by sluice; for ICL also its transcript, and its codes from sluice's
        # codec encoder (which must give the official encoder's, case["ref_codes"]).
        command += ["--ref-audio", FIXTURES / "reference_audio" / args["ref_audio"]]
        if args.get("x_vector_only_mode"):
            command += ["--x-vector-only"]
        else:
            command += ["--ref-text", args["ref_text"]]
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
    raw = (case_json.parent / "waveform.bin").read_bytes()
    golden = struct.unpack(f"<{len(raw) // 4}f", raw)
    # ICL: the official cut of the reference's samples can keep one sample before the
    # frame boundary; sluice starts at the boundary.
    assert len(golden) - len(samples) in ((0, 1) if "ref_codes" in case else (0,))
    golden = golden[len(golden) - len(samples):]
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
    base = FIXTURES / "base_small"
    voice = FIXTURES / "reference_audio" / "voice_24k.wav"
    no_reference = speak("--model", base, "--text", "Hi", "--out", out)
    assert no_reference.returncode == 2 and "ref_audio" in no_reference.stderr
    icl = speak("--model", base, "--text", "Hi", "--ref-audio", voice, "--out", out)
    assert icl.returncode == 2 and "--ref-text" in icl.stderr and "--x-vector-only" in icl.stderr
    no_audio = speak("--model", base, "--text", "Hi", "--ref-text", "Hello.", "--out", out)
    assert no_audio.returncode == 2 and "--ref-audio" in no_audio.stderr
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text("these are not samples")
    bad_audio = speak("--model", base, "--text", "Hi", "--ref-audio", not_audio, "--x-vector-only", "--out", out)
    assert bad_audio.returncode == 2 and "ref_audio" in bad_audio.stderr and "notes.wav" in bad_audio.stderr
    not_base = speak("--model", FIXTURES / "custom_voice_small", "--text", "Hi", "--ref-audio", voice,
                     "--x-vector-only", "--out", out)
    assert not_base.returncode == 2 and "Base" in not_base.stderr
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
                "real_time_factor", "first_audio_talker_ms", "first_audio_predictor_ms", "first_audio_decoder_ms"):
        assert report[key] > 0, key
    # The first audio's stages happen one after the other within it.
    stages = (report["first_audio_talker_ms"] + report["first_audio_predictor_ms"] +
              report["first_audio_decoder_ms"])
    assert stages <= report["first_audio_ms"] * 1.001
