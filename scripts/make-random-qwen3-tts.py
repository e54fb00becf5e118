#!/usr/bin/env python3
"""Writes a random-weight Qwen3-TTS-12Hz checkpoint at the REAL shapes, in the official
layout, for load, memory and speed tests of the C++ engine without downloading a model.

    .venv-qwen-tts/bin/python scripts/make-random-qwen3-tts.py --size 0.6b --kind custom_voice --out DIR

Made with the official classes (qwen-tts 0.1.1): Qwen3TTSForConditionalGeneration with the
real config.json values (as published in Qwen/Qwen3-TTS-12Hz-*: 28 talker layers, 5
code-predictor layers, codec vocab 3072, text vocab 151936, the real codec/speaker/
language ids and special text ids 151643..151673, assistant 77091), saved in BF16 by
save_pretrained; the codec (Qwen3TTSTokenizerV2Model, the decoder and encoder configs of
the published speech_tokenizer/config.json) in F32 with random non-trivial decoder
weights; a byte-level BPE tokenizer (vocab.json, merges.txt, tokenizer_config.json) that
the official processor loads, whose special tokens sit at the real ids. The talker keeps
the classes' own random init (normal, std 0.02). The output is not committed; it sounds
like noise.
"""

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "qwen3_tts"))
import make_fixtures as fx  # noqa: E402  (shared helpers: codec randomization, tokenizer files)

TEXT_VOCAB_ROWS = 151936
SPECIAL_IDS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645,
               "<tts_pad>": 151671, "<tts_text_bos>": 151672, "<tts_text_eod>": 151673}
ASSISTANT_ID = 77091

SPEAKERS = {"serena": 3066, "vivian": 3065, "uncle_fu": 3010, "ryan": 3061, "aiden": 2861,
            "ono_anna": 2873, "sohee": 2864, "eric": 2875, "dylan": 2878}
SPEAKER_DIALECT = {name: False for name in SPEAKERS}
SPEAKER_DIALECT.update(eric="sichuan_dialect", dylan="beijing_dialect")
LANGUAGES = {"chinese": 2055, "english": 2050, "german": 2053, "italian": 2070, "portuguese": 2071,
             "spanish": 2054, "japanese": 2058, "korean": 2064, "french": 2061, "russian": 2069}
DIALECTS = {"beijing_dialect": 2074, "sichuan_dialect": 2062}
CODEC_CONTROL = dict(codec_pad_id=2148, codec_bos_id=2149, codec_eos_token_id=2150, codec_think_id=2154,
                     codec_nothink_id=2155, codec_think_bos_id=2156, codec_think_eos_id=2157)
SIZES = {"0.6b": dict(tag="0b6", hidden=1024, intermediate=3072),
         "1.7b": dict(tag="1b7", hidden=2048, intermediate=6144)}

CODEC_DECODER = dict(
    attention_bias=False, latent_dim=1024, codebook_dim=512, codebook_size=2048, decoder_dim=1536,
    hidden_act="silu", hidden_size=512, intermediate_size=1024, layer_scale_initial_scale=0.01,
    max_position_embeddings=8000, head_dim=64, num_attention_heads=16, num_hidden_layers=8,
    num_key_value_heads=16, num_quantizers=16, num_semantic_quantizers=1, rms_norm_eps=1e-5,
    rope_theta=10000, semantic_codebook_size=4096, sliding_window=72, upsample_rates=[8, 5, 4, 3],
    upsampling_ratios=[2, 2], vector_quantization_hidden_dimension=512)
CODEC_ENCODER = dict(
    frame_rate=12.5, audio_channels=1, codebook_dim=256, codebook_size=2048, compress=2,
    dilation_growth_rate=2, head_dim=64, hidden_act="gelu", hidden_size=512, intermediate_size=2048,
    kernel_size=7, last_kernel_size=3, layer_scale_initial_scale=0.01, max_position_embeddings=8000,
    norm_eps=1e-5, num_attention_heads=8, num_filters=64, num_hidden_layers=8, num_key_value_heads=8,
    num_quantizers=32, num_residual_layers=1, num_semantic_quantizers=1, pad_mode="constant",
    residual_kernel_size=3, rope_theta=10000, sampling_rate=24000, sliding_window=250,
    trim_right_ratio=1.0, upsample_groups=512, upsampling_ratios=[8, 6, 5, 4], use_causal_conv=True,
    use_conv_shortcut=False, vector_quantization_hidden_dimension=256)


def real_tokenizer():
    """The tiny BPE's merges at ids 256.., "assistant" moved to 77091, unused filler
    entries up to 151642, then the added tokens 151643..151673 (reserved ones between)."""
    tiny_vocab, merges, _ = fx.build_bpe()
    tokens = [None] * SPECIAL_IDS["<|endoftext|>"]
    for tok, idx in tiny_vocab.items():
        if tok != "assistant":
            tokens[idx] = tok
    tokens[ASSISTANT_ID] = "assistant"
    free = 0
    for i, tok in enumerate(tokens):
        if tok is None:
            tokens[i] = f"<|unused_{free}|>"  # never produced: no merge builds it
            free += 1
    vocab = {tok: i for i, tok in enumerate(tokens)}
    special = {}
    for idx in range(SPECIAL_IDS["<|endoftext|>"], SPECIAL_IDS["<tts_text_eod>"] + 1):
        name = next((t for t, i in SPECIAL_IDS.items() if i == idx), f"<|reserved_special_{idx}|>")
        special[name] = idx
    return vocab, merges, special


def config_dict(size: dict, kind: str) -> dict:
    custom = kind == "custom_voice"
    cp = dict(vocab_size=2048, hidden_size=1024, intermediate_size=3072, num_hidden_layers=5,
              num_attention_heads=16, num_key_value_heads=8, head_dim=128, hidden_act="silu",
              max_position_embeddings=65536, rms_norm_eps=1e-6, rope_theta=1000000, rope_scaling=None,
              attention_bias=False, use_sliding_window=False, sliding_window=None,
              layer_types=["full_attention"] * 5, num_code_groups=16, initializer_range=0.02)
    talker = dict(
        code_predictor_config=cp, vocab_size=3072, hidden_size=size["hidden"],
        intermediate_size=size["intermediate"], num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, hidden_act="silu", max_position_embeddings=32768,
        rms_norm_eps=1e-6, rope_theta=1000000,
        rope_scaling={"interleaved": True, "mrope_section": [24, 20, 20], "rope_type": "default"},
        attention_bias=False, use_sliding_window=False, sliding_window=None, num_code_groups=16,
        text_hidden_size=2048, text_vocab_size=TEXT_VOCAB_ROWS, position_id_per_seconds=13,
        pad_token_id=2148, initializer_range=0.02,
        codec_language_id=dict(LANGUAGES, **(DIALECTS if custom else {})),
        spk_id=dict(SPEAKERS) if custom else {}, spk_is_dialect=dict(SPEAKER_DIALECT) if custom else {},
        **CODEC_CONTROL)
    return dict(architectures=["Qwen3TTSForConditionalGeneration"], talker_config=talker,
                tokenizer_type="qwen3_tts_tokenizer_12hz", tts_model_size=size["tag"], tts_model_type=kind,
                im_start_token_id=151644, im_end_token_id=151645, tts_pad_token_id=151671,
                tts_bos_token_id=151672, tts_eos_token_id=151673, assistant_token_id=ASSISTANT_ID)


def make_codec(out_dir: Path) -> None:
    from qwen_tts.core.tokenizer_12hz.configuration_qwen3_tts_tokenizer_v2 import Qwen3TTSTokenizerV2Config
    from qwen_tts.core.tokenizer_12hz.modeling_qwen3_tts_tokenizer_v2 import Qwen3TTSTokenizerV2Model

    torch.manual_seed(100)
    config = Qwen3TTSTokenizerV2Config(encoder_config=dict(CODEC_ENCODER), decoder_config=dict(CODEC_DECODER))
    config.architectures = ["Qwen3TTSTokenizerV2Model"]
    model = Qwen3TTSTokenizerV2Model(config).to(torch.float32).eval()
    # The class init leaves the codebooks at zero and SnakeBeta/layer scales trivial:
    # the same non-trivial randomization as the tiny fixture codec.
    fx.randomize(model.decoder, 101, fx.codec_rules)
    fx.fix_codebooks(model.decoder, 102)
    fx.calibrate_output(model.decoder, print)
    model.save_pretrained(out_dir, safe_serialization=True)
    fx.write_json(out_dir / "preprocessor_config.json", fx.CODEC_PREPROCESSOR_CONFIG)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", choices=sorted(SIZES), required=True)
    parser.add_argument("--kind", choices=["custom_voice", "voice_design"], required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--check", action="store_true",
                        help="load the result with the official wrapper and generate a few frames")
    args = parser.parse_args()
    from qwen_tts.core.models.configuration_qwen3_tts import Qwen3TTSConfig
    from qwen_tts.core.models.modeling_qwen3_tts import Qwen3TTSForConditionalGeneration

    start = time.time()
    out = fx.fresh_dir(Path(args.out))
    vocab, merges, special = real_tokenizer()
    fx.write_tokenizer_files(out, vocab, merges, special)

    cfg = config_dict(SIZES[args.size], args.kind)
    config = Qwen3TTSConfig(**{k: v for k, v in cfg.items() if k != "architectures"})
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)  # build in BF16: half the memory of F32
    model = Qwen3TTSForConditionalGeneration(config).eval()
    torch.set_default_dtype(torch.float32)
    model.save_pretrained(out, safe_serialization=True, max_shard_size="20GB")
    params = sum(p.numel() for p in model.parameters())
    del model
    fx.write_json(out / "config.json", fx.published_config(cfg))
    fx.write_json(out / "generation_config.json", fx.GENERATION_CONFIG)
    make_codec(out / "speech_tokenizer")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    print(f"{out}: {params / 1e6:.0f}M talker parameters, {size / 2**20:.0f} MiB on disk, "
          f"{time.time() - start:.0f} s")

    if args.check:
        from qwen_tts import Qwen3TTSModel
        t0 = time.time()
        tts = Qwen3TTSModel.from_pretrained(str(out), dtype=torch.float32)
        kw = dict(language="english", do_sample=False, subtalker_dosample=False, max_new_tokens=5)
        if args.kind == "custom_voice":
            wavs, sr = tts.generate_custom_voice(text="Hello world.", speaker="ryan", **kw)
        else:
            wavs, sr = tts.generate_voice_design(text="Hello world.", instruct="A calm voice.", **kw)
        print(f"check: {len(wavs[0]) // 1920} frames, {len(wavs[0])} samples at {sr} Hz, "
              f"{time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
