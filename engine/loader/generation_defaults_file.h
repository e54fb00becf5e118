#pragma once
// The generation defaults a model file declares: a GGUF's general.sampling.temp,
// .top_k, .top_p, .min_p and .penalty_repeat (the keys gguf-py writes), or a
// Hugging Face folder's generation_config.json (temperature, top_k, top_p, min_p,
// repetition_penalty, max_new_tokens). A value no request could send is dropped
// with a warning naming the file; nothing here fails a load.
#include <string>

#include "engine/generation_defaults.h"
#include "engine/loader/gguf_file.h"

namespace sluice::loader {

engine::GenerationDefaults generation_defaults_from_gguf(const GgufFile& file);

// `path`: a GGUF file, or a model folder (generation_config.json, when present).
engine::GenerationDefaults read_generation_defaults(const std::string& path);

}  // namespace sluice::loader
