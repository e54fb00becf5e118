#!/usr/bin/env bash
# Creates the reference venv for Qwen3-TTS (the official `qwen-tts` package) that
# tests/fixtures/qwen3_tts/make_fixtures.py and scripts/make-random-qwen3-tts.py run in.
# Nothing is done when the venv is already there and imports qwen_tts.
#
#   scripts/qwen-tts-reference-venv.sh [DIR]     (default: .venv-qwen-tts in the repo root)
#
# Pinned: qwen-tts 0.1.1 pins transformers 4.57.3; torch/torchaudio 2.8.0 are what the
# goldens were made with. The package imports its 25 Hz tokenizer at start-up, so
# torchaudio, sox and onnxruntime are needed even for the 12 Hz models (see
# qwen_tts/core/__init__.py, which imports tokenizer_25hz).
# PyPI's Linux x86_64 torch is the CUDA build (~4 GB with its nvidia-* wheels); it runs
# on the CPU, which is all the fixtures use.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/.venv-qwen-tts}

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import qwen_tts" >/dev/null 2>&1; then
    echo "qwen-tts reference venv: $venv (present)"
    exit 0
fi

python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    qwen-tts==0.1.1 transformers==4.57.3 torch==2.8.0 torchaudio==2.8.0 \
    sox==1.5.0 onnxruntime==1.32.0
"$venv/bin/python" -c "import qwen_tts" >/dev/null 2>&1
echo "qwen-tts reference venv: $venv (created)"
