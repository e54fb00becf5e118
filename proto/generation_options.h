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
#include "proto/structured_output.h"

namespace sluice::proto {

// How lenient the parsers are; the server fills it from its config.
struct ParseOptions {
  // Unknown keys, at the top of the body or inside any of its objects: 400 naming
  // the key's path when strict, else ignored (listed in ignored_fields and logged at
  // debug by the server), as vLLM does (fields::FieldPolicy).
  bool strict_fields = false;
  // `priority` is honoured only when the operator allows it (within
  // +-kMaxPriority); otherwise it is type-checked and ignored.
  bool allow_priority = false;
};

inline constexpr int32_t kMaxPriority = 1000;

struct GenerationOptions {
  std::string model;                // required, non-empty
  engine::SamplingParams sampling;  // temperature [0, 2] (default 1), top_p (0, 1], top_k -1 | >= 1,
                                    // min_p [0, 1], presence/frequency [-2, 2], repetition (0, 2],
                                    // logit_bias (<= 300 entries), seed, ignore_eos, n [1, 16],
                                    // max_tokens, logprobs, min_tokens (vLLM)
  // The sampling fields the body set; the rest take the model's generation defaults
  // where the model is known (engine::apply_generation_defaults).
  engine::SamplingFieldsGiven given;
  std::vector<std::string> stop;    // at most 4, none empty
  bool stream = false;
  bool include_usage = false;       // stream_options.include_usage; only with stream
  bool continuous_usage_stats = false;  // vLLM stream_options: usage in every chunk
  std::optional<std::string> user;
  int32_t priority = 0;             // sluice extension (ParseOptions::allow_priority), for the scheduler
  std::optional<double> timeout_s;  // sluice extension: seconds (> 0) from arrival to abort
  // vLLM's extras.
  std::vector<int32_t> stop_token_ids;      // at most engine::kMaxStopTokenIds
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  // sluice extension: false opts this request out of the model's speculative decoding
  // (the text is the same either way; only the speed differs).
  bool speculative = true;
  std::optional<bool> add_special_tokens;   // empty: the endpoint's default
  // response_format / structured_outputs / guided_* / grammar / json_schema (structured_output.h).
  std::optional<StructuredOutput> structured_output;
  // Keys accepted but without effect here (OpenAI fields that ask for nothing we
  // do, and unknown keys when not strict): for a debug log line.
  std::vector<std::string> ignored_fields;
};

// Applies one body key if it is a shared field. Sets `handled` when it was one.
fields::Error apply_generation_field(const std::string& key, const fields::Json& value,
                                     GenerationOptions& options, bool& handled,
                                     const ParseOptions& parse = {});

// A key neither parser knows: 400 when strict, else recorded as ignored.
fields::Error unknown_key(const std::string& param, GenerationOptions& options, const ParseOptions& parse);

// Checks across fields, once every key was applied: `model` present,
// stream_options only with stream, min_tokens <= max_tokens. `body` is the whole
// request object.
fields::Error check_generation_options(const fields::Json& body, const GenerationOptions& options);

}  // namespace sluice::proto
