#include "engine/tts/model/tts_generator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "backends/check.h"
#include "engine/tts/model/tts_sampling.h"

namespace sluice::engine::tts {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

TtsStarted refuse(std::string message, std::string param) {
  TtsStarted out;
  out.error = std::move(message);
  out.param = std::move(param);
  return out;
}

}  // namespace

struct TtsGenerator::Sequence {
  int64_t id = 0;
  TtsPrompt prompt;
  int32_t max_frames = 0;
  SamplingParams talker;     // with min_tokens = 2 banning the codec EOS
  SamplingParams predictor;
  Rng rng{0, 0};
  std::vector<int32_t> blocks;  // reserved for prompt + max_frames positions
  int32_t num_cached = 0;       // talker positions in the KV cache
  std::vector<int32_t> c0_history;  // generated codebook-0 ids (the penalty's history)
  std::vector<int32_t> frames;      // every frame's codes [frames, G]; the last is the next input
};

TtsGenerator::TtsGenerator(const TtsModel& model, TtsGeneratorOptions options)
    : model_(model),
      config_(model.config()),
      options_(options),
      cache_(model.backend(), config_.talker,
             KvCacheConfig{std::max<int64_t>(1, (options.kv_tokens + 15) / 16), 16, options.kv_dtype}),
      talker_(model.backend(), config_, model.weights()),
      predictor_(model.backend(), config_, model.weights(), std::max(options.max_sequences, 1)),
      talker_sampler_(static_cast<int32_t>(config_.talker.vocab_size)),
      predictor_sampler_(static_cast<int32_t>(config_.predictor.vocab_size)) {
  for (int64_t b = cache_.num_blocks() - 1; b >= 0; --b) free_blocks_.push_back(static_cast<int32_t>(b));
}

TtsGenerator::~TtsGenerator() = default;

TtsStarted TtsGenerator::start(const TtsRequest& request) {
  if (!model_.tokenizer()) return refuse("this model has no tokenizer: give it a built prompt", "input");
  auto built = build_prompt(config_, *model_.tokenizer(), request.prompt);
  if (auto* error = std::get_if<PromptError>(&built)) return refuse(error->message, error->param);
  return start(std::get<TtsPrompt>(std::move(built)), request);
}

TtsStarted TtsGenerator::start(TtsPrompt prompt, const TtsRequest& r) {
  if (auto error = check_sampling(r)) return refuse(error->message, error->param);
  const int32_t max_frames = resolve_max_frames(config_, r, options_.default_max_frames);
  SLUICE_CHECK(!prompt.rows.empty(), "TtsGenerator::start: empty prompt");
  const auto num_rows = static_cast<int64_t>(prompt.rows.size());
  // The last frame is never fed back: positions run to prompt + max_frames - 1.
  const int64_t positions = num_rows + max_frames - 1;
  if (positions > config_.talker.context_length)
    return refuse("the prompt (" + std::to_string(num_rows) + " rows) and max_frames exceed the model's " +
                      std::to_string(config_.talker.context_length) + " positions",
                  r.max_frames ? "max_frames" : "input");
  const int64_t blocks = (positions + cache_.block_size() - 1) / cache_.block_size();
  if (blocks > cache_.num_blocks())
    return refuse("this request needs " + std::to_string(positions) + " KV positions; the generator has " +
                      std::to_string(cache_.num_slots()),
                  "max_frames");
  if (num_running() >= options_.max_sequences || blocks > static_cast<int64_t>(free_blocks_.size()))
    return refuse("the speech generator is full; retry when a sequence finishes", "");

  auto seq = std::make_unique<Sequence>();
  seq->id = next_id_++;
  seq->prompt = std::move(prompt);
  seq->max_frames = max_frames;
  seq->talker = talker_sampling(config_, r, max_frames);
  seq->predictor = predictor_sampling(config_, r);
  seq->rng = r.seed ? Rng(*r.seed, 0) : Rng::from_entropy();
  for (int64_t i = 0; i < blocks; ++i) {
    seq->blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  TtsStarted out;
  out.id = seq->id;
  out.instructions_dropped = seq->prompt.instructions_dropped;
  running_.push_back(std::move(seq));
  return out;
}

bool TtsGenerator::cancel(int64_t id) {
  for (size_t i = 0; i < running_.size(); ++i) {
    if (running_[i]->id == id) {
      finish(i);
      return true;
    }
  }
  return false;
}

void TtsGenerator::finish(size_t index) {
  Sequence& seq = *running_[index];
  free_blocks_.insert(free_blocks_.end(), seq.blocks.rbegin(), seq.blocks.rend());
  running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
}

// New sequences contribute their prompt rows, the others their last frame's
// feedback row (talker_step.h).
void TtsGenerator::build_talker_step() {
  TalkerStepBuilder builder(config_, static_cast<int32_t>(cache_.block_size()), step_);
  for (const auto& owned : running_) {
    const Sequence& seq = *owned;
    const int64_t count = seq.num_cached == 0 ? static_cast<int64_t>(seq.prompt.rows.size()) : 1;
    builder.add(seq.prompt, seq.frames, seq.num_cached, count, seq.blocks);
  }
  builder.finish();
}

std::vector<TtsFrameEvent> TtsGenerator::step() {
  std::vector<TtsFrameEvent> events;
  if (running_.empty()) return events;
  const auto talker_start = Clock::now();
  build_talker_step();
  const int64_t vocab = config_.talker.vocab_size;
  const size_t n = running_.size();
  logits_.resize(n * static_cast<size_t>(vocab));
  talker_.forward(step_, cache_, logits_);

  // Codebook 0: control ids suppressed (except EOS), then the sampler (EOS banned
  // for the first 2 frames, penalty, temperature, top-k, top-p).
  const int64_t eos = config_.codec.eos;
  std::vector<int32_t> c0(n);
  for (size_t i = 0; i < n; ++i) {
    Sequence& seq = *running_[i];
    seq.num_cached += step_.sequences[i].num_queries;
    const std::span<float> row(logits_.data() + i * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    suppress_control_codes(config_, row);
    c0[i] = talker_sampler_.sample(row, seq.talker, {}, seq.c0_history, seq.rng).token;
  }
  times_.talker_ms += ms_since(talker_start);
  ++times_.steps;

  // Codebooks 1..G-1 for every sequence that did not stop, in one batch.
  const auto predictor_start = Clock::now();
  std::vector<int32_t> batch_rows, batch_c0;
  std::vector<size_t> batch_seq;
  for (size_t i = 0; i < n; ++i) {
    if (c0[i] == eos) continue;
    batch_rows.push_back(static_cast<int32_t>(i));
    batch_c0.push_back(c0[i]);
    batch_seq.push_back(i);
  }
  const int32_t groups = config_.num_code_groups;
  std::vector<int32_t> codes(batch_seq.size() * static_cast<size_t>(groups));
  if (!batch_seq.empty()) {
    predictor_.predict(talker_.final_hidden(), batch_rows, batch_c0,
                       [&](int64_t row, int32_t, std::span<const float> logits) {
                         Sequence& seq = *running_[batch_seq[static_cast<size_t>(row)]];
                         return predictor_sampler_.sample(logits, seq.predictor, {}, {}, seq.rng).token;
                       },
                       codes);
  }
  times_.predictor_ms += ms_since(predictor_start);

  std::vector<size_t> finished;
  size_t next = 0;
  for (size_t i = 0; i < n; ++i) {
    Sequence& seq = *running_[i];
    TtsFrameEvent event;
    event.id = seq.id;
    if (c0[i] == eos) {
      event.finished = true;
      event.finish_reason = "stop";
    } else {
      const auto begin = codes.begin() + static_cast<std::ptrdiff_t>(next * static_cast<size_t>(groups));
      event.codes.assign(begin, begin + groups);
      ++next;
      seq.c0_history.push_back(c0[i]);
      seq.frames.insert(seq.frames.end(), event.codes.begin(), event.codes.end());
      ++times_.frames;
      if (static_cast<int32_t>(seq.c0_history.size()) >= seq.max_frames) {
        event.finished = true;
        event.finish_reason = "length";
      }
    }
    if (event.finished) finished.push_back(i);
    events.push_back(std::move(event));
  }
  for (auto it = finished.rbegin(); it != finished.rend(); ++it) finish(*it);
  return events;
}

}  // namespace sluice::engine::tts
