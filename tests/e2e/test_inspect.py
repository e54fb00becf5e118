"""`sluice inspect` calls a file servable only if `serve` would load it: the same
checks (tensors present with their shapes, tokenizer, chat template) on corrupted
copies of the tiny fixture made here."""
import struct
import subprocess

import pytest

from conftest import SLUICE_BIN, TINY_MODEL


def corrupt(tmp_path, name, edit):
    data = bytearray(TINY_MODEL.read_bytes())
    edit(data)
    path = tmp_path / f"{name}.gguf"
    path.write_bytes(bytes(data))
    return path


def gguf_string(text):
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def rename_tensor(data):
    at = data.index(gguf_string("blk.0.attn_q.weight"))
    data[at + 8:at + 8 + len("blk.0.attn_q.weight")] = b"blk.0.attn_X.weight"


def reshape_tensor(data):
    name = gguf_string("blk.0.ffn_up.weight")
    at = data.index(name) + len(name)
    (n_dims,) = struct.unpack_from("<I", data, at)
    assert n_dims == 2
    (cols,) = struct.unpack_from("<Q", data, at + 4)
    rows_at = at + 4 + 8
    (rows,) = struct.unpack_from("<Q", data, rows_at)
    # Same element count, other shape: the bytes still fit, the model's shape does not.
    struct.pack_into("<Q", data, at + 4, cols * 2)
    struct.pack_into("<Q", data, rows_at, rows // 2)


def break_merge(data):
    at = data.index(gguf_string("h e"))
    data[at + 8 + 1] = ord("_")  # "h_e": no longer "left right"


def inspect(path):
    return subprocess.run([str(SLUICE_BIN), "inspect", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name, edit, reason", [
    ("missing-tensor", rename_tensor, "blk.0.attn_q.weight"),
    ("wrong-shape", reshape_tensor, "blk.0.ffn_up.weight"),
    ("bad-merge", break_merge, "tokenizer.ggml.merges"),
])
def test_inspect_refuses_what_serve_refuses(tmp_path, start_daemon, name, edit, reason):
    path = corrupt(tmp_path, name, edit)
    result = inspect(path)
    assert result.returncode == 1, result.stdout
    assert "servable:" not in result.stdout
    assert "not servable" in result.stderr and reason in result.stderr, result.stderr

    daemon = start_daemon(model=path, ready=False)
    assert daemon.wait_exit(timeout=60) != 0
    assert reason in daemon.log


def test_inspect_accepts_the_intact_fixture():
    result = inspect(TINY_MODEL)
    assert result.returncode == 0, result.stderr
    assert "servable: tiny-llama" in result.stdout
