#pragma once
// The request fields that /v1/completions and /v1/chat/completions share: the model,
// the sampling settings (straight into engine::SamplingParams), stop strings,
// streaming, and sluice's scheduling extensions. The two parsers hand every body key
// here first and handle only what is left.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/generation_defaults.h"
#include "engine/sampler.h"
#include "proto/fields.h"

namespace sluice::proto {

struct GenerationOptions {
  std::string model;                // required, non-empty
  engine::SamplingParams sampling;  // temperature [0, 2] (default 1), top_p (0, 1], top_k -1 | >= 1,
                                    // min_p [0, 1], presence/frequency [-2, 2], repetition (0, 2],
                                    // logit_bias, seed, ignore_eos, n [1, 128], max_tokens, logprobs
  // The sampling fields the body set; the rest take the model's generation defaults
  // where the model is known (engine::apply_generation_defaults).
  engine::SamplingFieldsGiven given;
  std::vector<std::string> stop;    // at most 4, none empty
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage; only with stream
  std::optional<std::string> user;
  int32_t priority = 0;             // sluice extension, handed to the scheduler as is
  std::optional<double> timeout_s;  // sluice extension: seconds (> 0) from arrival to abort
};

// Applies one body key if it is a shared field. Sets `handled` when it was one.
fields::Error apply_generation_field(const std::string& key, const fields::Json& value,
                                     GenerationOptions& options, bool& handled);

// Checks across fields, once every key was applied: `model` present,
// stream_options only with stream. `body` is the whole request object.
fields::Error check_generation_options(const fields::Json& body, const GenerationOptions& options);

}  // namespace sluice::proto
