#pragma once
// Turns one sequence's logits into its next token, on the host.
//
// SamplingParams is the plain per-request record that proto/ fills from the OpenAI
// fields; Rng is the per-sequence random stream; Sampler applies the logit
// processors in vLLM's order and draws a token:
//
//   logit_bias -> penalties (repetition, then frequency/presence) -> temperature
//   (0 -> greedy argmax, lowest id on ties) -> top_k -> top_p -> min_p
//   -> inverse-CDF draw over the kept prefix of the descending order (or, where the
//   engine's backend samples on the device, over the kept tokens in id order: see
//   DrawOrder).
//
// The nucleus cut and the draw use a mass-weighted quickselect instead of a sort:
// expected O(vocab), same token as a walk over the sorted order would give.
//
// Log-probabilities are those of the RAW model logits (log_softmax before any
// processor), as vLLM returns by default: they describe the model, not the sampling
// settings, and greedy / temperature-0 requests get meaningful values. The one
// exception is a grammar's mask (structured outputs): applied first, before every
// processor, it also shapes the log-probabilities (masked tokens have none).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "backends/backend.h"

namespace sluice::engine {

// Where a draw's uniform lands on the kept set's CDF: over the kept tokens in
// descending order (the host's own draw), or in id order (Backend::sample's). An
// engine whose backend samples on the device takes its host-sampled steps (drafts
// to verify, grammars, prompt scoring) in id order too, so that a seeded sequence
// draws the same token from the same uniform whichever side samples its step.
enum class DrawOrder { descending, by_id };

using LogitBias = std::map<int32_t, float>;
inline std::shared_ptr<const LogitBias> make_logit_bias(LogitBias bias) {
  return std::make_shared<const LogitBias>(std::move(bias));
}

struct SamplingParams {
  float temperature = 1.0f;         // 0 (or < 1e-5): greedy
  int32_t top_k = 0;                // 0 or -1: off
  float top_p = 1.0f;               // 1: off
  float min_p = 0.0f;               // 0: off
  float presence_penalty = 0.0f;    // subtracted once from every token seen in the output
  float frequency_penalty = 0.0f;   // subtracted once per occurrence in the output
  float repetition_penalty = 1.0f;  // HF/vLLM: tokens seen in prompt or output, >0 divided, <=0 multiplied
  // token id -> added to its logit. Immutable and shared by every choice (and every
  // prompt) of a request, so copying the params never copies the map. Null: none.
  std::shared_ptr<const LogitBias> logit_bias;
  std::optional<uint64_t> seed;     // absent: a random stream per sequence
  std::optional<int32_t> logprobs;  // absent: none; N: the chosen token plus the top N alternatives
  // Absent: none; N: every prompt token after the first is scored (its log-probability
  // given the tokens before it, plus the top N alternatives), by choice 0 only.
  std::optional<int32_t> prompt_logprobs;
  bool ignore_eos = false;          // read by the stop checker, not here
  std::optional<int32_t> max_tokens;  // absent: up to the model's context length
  int32_t n = 1;                    // choices per request (one Sequence each)
  // vLLM: before this many output tokens, `min_tokens_banned` (the EOS ids unless
  // ignore_eos, and the stop_token_ids) are masked out and stop strings do not stop.
  int32_t min_tokens = 0;
  std::vector<int32_t> min_tokens_banned;  // filled by the engine at admission

  bool is_greedy() const { return temperature < 1e-5f; }
};

// xoshiro256** seeded through splitmix64. Deterministic: the same (seed, stream)
// always yields the same numbers, whatever else runs in the batch.
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream);
  static Rng from_entropy();

  uint64_t next();
  double uniform();  // [0, 1), 53 bits

 private:
  uint64_t s_[4];
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;                    // of `token`, raw model distribution
  std::vector<TokenLogprob> top_logprobs;  // params.logprobs entries, best first (ties: lower id)
};

// Owns scratch buffers sized to the vocabulary. Not thread-safe: one per engine thread.
class Sampler {
 public:
  explicit Sampler(int32_t vocab_size, DrawOrder draw_order = DrawOrder::descending);

  // logits: [vocab_size] raw model output for one sequence. history_prompt /
  // history_output feed the penalties. Advances `rng` by exactly one draw unless
  // the request is greedy.
  // `allowed`, when not empty, is a bitmask over the vocabulary (bit id % 64 of word
  // id / 64; a grammar's mask): the other tokens are -infinity before every
  // processor, and the log-probabilities are those of the masked distribution.
  SampleResult sample(std::span<const float> logits, const SamplingParams& params,
                      std::span<const int32_t> history_prompt,
                      std::span<const int32_t> history_output, Rng& rng,
                      std::span<const uint64_t> allowed = {});

  // The processors on their own, for tests and for callers that only need one.
  // Each works in place on [vocab_size] logits.
  static void apply_logit_bias(std::span<float> logits, const LogitBias* bias);
  // min_tokens: the banned ids become -infinity while the output is shorter.
  static void apply_min_tokens(std::span<float> logits, const SamplingParams& params, size_t num_output);
  void apply_penalties(std::span<float> logits, const SamplingParams& params,
                       std::span<const int32_t> prompt, std::span<const int32_t> output);
  static void apply_temperature(std::span<float> logits, float temperature);
  // top_k / top_p / min_p: tokens outside the kept set become -infinity.
  void apply_top_k_top_p_min_p(std::span<float> logits, int32_t top_k, float top_p, float min_p);

  // For a backend that samples on the device: this sequence's settings with the
  // history-dependent processors (logit_bias, repetition, frequency and presence
  // penalties) resolved into per-token entries appended to `adjust`, and the one
  // uniform draw taken from `rng` exactly when sample() would take it. The row's
  // `adjust` span is left empty: the caller points it into `adjust` once all rows
  // of the step are built (appending may move the vector).
  backends::RowSampling device_row(const SamplingParams& params, std::span<const int32_t> history_prompt,
                                   std::span<const int32_t> history_output, Rng& rng,
                                   std::vector<backends::LogitAdjust>& adjust);
  // The device's answer in the host's form (top alternatives only when asked for).
  static SampleResult from_device(const backends::SampledToken& token, const SamplingParams& params);

  // `token`'s raw log-probability under `logits` and the top `num_top` alternatives:
  // how a prompt token is scored. Deterministic; touches no random stream.
  SampleResult score(std::span<const float> logits, int32_t token, int32_t num_top);

  static int32_t argmax(std::span<const float> logits);  // lowest id on ties
  static void log_softmax(std::span<const float> logits, std::span<float> out);

  int32_t vocab_size() const { return vocab_size_; }

 private:
  // The kept set of top_k, top_p and min_p: a prefix of the descending order
  // (lower id first on ties), left in ids_[0, count), with its total weight.
  struct Kept {
    size_t count = 0;
    double weight = 0.0;  // sum of exp(logit - max) over the kept tokens
  };
  Kept keep_prefix(std::span<const float> logits, int32_t top_k, float top_p, float min_p);
  // The first token of ids_[lo, hi), in descending order, at which `before` plus the
  // running weight reaches `target` (>= when inclusive, else >). Leaves the tokens
  // before it in ids_[lo, index), unsorted.
  struct Cut {
    size_t index = 0;
    double mass_through = 0.0;  // before + weight up to and including ids_[index]
  };
  Cut select_by_mass(std::span<const float> logits, size_t lo, size_t hi, double before, double target,
                     bool inclusive);
  void top_logprobs(std::span<const float> raw, int32_t n, double log_z,
                    std::vector<TokenLogprob>& out);
  // The first kept token in id order at which the running weight passes `target`.
  int32_t draw_by_id(const Kept& kept, double target);

  int32_t vocab_size_;
  DrawOrder draw_order_;
  std::vector<float> work_;      // [vocab_size] processed logits
  std::vector<float> weight_;    // [vocab_size] exp(logit - max)
  std::vector<int32_t> ids_;     // [vocab_size] token ids, permuted by the selections
  std::vector<int32_t> counts_;  // [vocab_size] output occurrences, reset after each use
  std::vector<uint8_t> seen_;    // [vocab_size] prompt-or-output membership, reset after each use
  std::vector<int32_t> adjust_index_;  // [vocab_size] token -> its entry in device_row's list, -1 between uses
};

}  // namespace sluice::engine
