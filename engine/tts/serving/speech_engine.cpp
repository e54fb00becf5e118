#include "engine/tts/serving/speech_engine.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/tts/serving/speech_codec_worker.h"
#include "engine/tts/model/tts_sampling.h"

namespace sluice::engine::tts {
namespace {

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

constexpr const char* kDeathPrefix = "the speech engine thread stopped: ";

// How long a step waits for the codec pass that turns a frame the last step made
// into a request's first audio to take its place in line (the codec thread wakes
// in well under a millisecond; the bound only covers a thread the OS did not run).
constexpr std::chrono::milliseconds kFirstAudioYield{20};

// After the engine died: said with a code the routes tell apart from a shutdown.
SubmitResult refused_dead(const std::string& reason) {
  SubmitResult out;
  out.status = SubmitStatus::shutting_down;
  out.message = reason;
  out.code = "engine_dead";
  return out;
}

}  // namespace

// A request on the engine thread: what its rows are made of and how it samples.
struct SpeechEngine::Active {
  std::string id;
  std::shared_ptr<RequestStream> stream;
  SequencePtr seq;
  TtsPrompt prompt;
  SamplingParams talker;
  SamplingParams predictor;
  Rng rng{0, 0};
  std::vector<int32_t> c0_history;  // generated codebook-0 ids: the penalty's history
  std::vector<int32_t> frames;      // every frame's codes [frames, G]: feedback rows, also on recompute
  int64_t num_input_tokens = 0;
  Clock::time_point arrival;
};

struct SpeechEngine::InboxItem {
  std::unique_ptr<Active> active;
  int32_t first_chunk_frames = 1;
  int32_t chunk_frames = 4;
};

SpeechEngine::SpeechEngine(const TtsModel& model, CodecDecoder& codec, SpeechEngineConfig config,
                           EngineObserver* observer, SpeechObserver* speech_observer)
    : model_(model),
      codec_(codec),
      config_(std::move(config)),
      observer_(observer),
      speech_observer_(speech_observer),
      shell_(config_.max_waiting) {
  if (config_.block_size <= 0 || config_.max_num_seqs <= 0 || config_.max_num_batched_tokens <= 0 ||
      config_.max_waiting < 0 || config_.max_decode_frames <= 0)
    throw std::invalid_argument("speech engine: block_size, max_num_seqs, max_num_batched_tokens and "
                                "max_decode_frames must be positive");
  const TtsConfig& tc = model_.config();
  const ModelHparams& hp = tc.talker;
  const uint64_t bytes_per_block = KvCache::bytes_per_block(hp, config_.block_size, config_.kv_dtype);
  num_blocks_ = static_cast<int32_t>(std::min<uint64_t>(config_.kv_cache_bytes / bytes_per_block, 1u << 30));
  if (num_blocks_ <= 0)
    throw std::invalid_argument(fmt::format("speech engine: a KV budget of {} bytes holds no block of {} bytes",
                                            config_.kv_cache_bytes, bytes_per_block));
  max_model_len_ = std::min<int64_t>(hp.context_length, static_cast<int64_t>(num_blocks_) * config_.block_size);

  backends::Backend& backend = model_.backend();
  cache_ = std::make_unique<KvCache>(backend, hp, KvCacheConfig{num_blocks_, config_.block_size, config_.kv_dtype});
  talker_ = std::make_unique<Talker>(backend, tc, model_.weights());
  predictor_ = std::make_unique<CodePredictor>(backend, tc, model_.weights(), config_.max_num_seqs);
  talker_sampler_ = std::make_unique<Sampler>(static_cast<int32_t>(hp.vocab_size));
  predictor_sampler_ = std::make_unique<Sampler>(static_cast<int32_t>(tc.predictor.vocab_size));
  SchedulerConfig sc;
  sc.max_num_batched_tokens = config_.max_num_batched_tokens;
  sc.max_num_seqs = config_.max_num_seqs;
  sc.max_waiting = config_.max_waiting;
  sc.max_model_len = max_model_len_;
  sc.kv = BlockPoolConfig{num_blocks_, config_.block_size, config_.enable_prefix_caching};
  scheduler_ = std::make_unique<Scheduler>(sc);
  turns_ = config_.compute_turns;
  if (turns_ == nullptr) {
    own_turns_ = std::make_unique<ComputeTurns>(backend.device() == backends::DeviceKind::cpu &&
                                                codec_.backend().device() == backends::DeviceKind::cpu);
    turns_ = own_turns_.get();
  }
  codec_worker_ = std::make_unique<SpeechCodecWorker>(codec_, config_.max_decode_frames, speech_observer_, *turns_);
  kv_bytes_ = bytes_per_block * static_cast<uint64_t>(num_blocks_);
  publish_stats(nullptr);
}

SpeechEngine::~SpeechEngine() { stop(); }

int32_t SpeechEngine::sample_rate() const { return static_cast<int32_t>(codec_.config().output_sample_rate); }

void SpeechEngine::start() {
  codec_worker_->start();
  shell_.start([this] { loop(); }, kDeathPrefix,
               [this](const std::string& reason, std::vector<Queued> queued) { die(reason, std::move(queued)); });
}

void SpeechEngine::stop() {
  // Never started: what was submitted ends "abort" here, on the caller's thread.
  if (!shell_.stop()) end_queued(shell_.drain().items, FinishReason::abort, "the server is shutting down");
  if (codec_worker_) codec_worker_->stop();
}

SubmitResult SpeechEngine::submit(SpeechRequest request) {
  const TtsConfig& tc = model_.config();
  const auto reject = [&](std::string message, std::string param) {
    shell_.count_rejected();
    return submit_rejected(std::move(message), std::move(param));
  };
  if (auto error = check_sampling(request.tts)) return reject(error->message, error->param);
  if (request.prompt.rows.empty()) return reject("the prompt is empty", "input");
  int32_t max_frames = resolve_max_frames(tc, request.tts, config_.default_max_frames);
  const auto num_rows = static_cast<int64_t>(request.prompt.rows.size());
  // A request that names no limit gets what the context leaves after its prompt.
  if (!request.tts.max_frames)
    max_frames = static_cast<int32_t>(std::clamp<int64_t>(max_model_len_ - num_rows, 1, max_frames));

  auto active = std::make_unique<Active>();
  active->id = request.request_id;
  active->prompt = std::move(request.prompt);
  active->num_input_tokens = active->prompt.num_text_tokens;
  active->talker = talker_sampling(tc, request.tts, max_frames);
  active->predictor = predictor_sampling(tc, request.tts);
  active->rng = request.tts.seed ? Rng(*request.tts.seed, 0) : Rng::from_entropy();
  active->arrival = Clock::now();
  // The scheduler's rule: prompt rows + frames within the served length.
  if (num_rows + max_frames > max_model_len_) {
    return reject(fmt::format("the input ({} prompt rows) and {} frames exceed the {} positions this model serves",
                              num_rows, max_frames, max_model_len_),
                  request.tts.max_frames ? "max_new_tokens" : "input");
  }
  auto params = std::make_shared<SamplingParams>();
  params->max_tokens = max_frames;
  // A speech sequence's "tokens" are its rows' content keys (prefix cache), then its
  // codebook-0 ids; only the prompt rows' blocks may be cached (sequence.h).
  active->seq = std::make_shared<Sequence>(request.request_id, prompt_row_keys(active->prompt, tc.num_code_groups),
                                           params, active->arrival);
  active->seq->set_cacheable_tokens(num_rows);
  active->seq->set_priority(request.priority);
  const auto deadline = request.deadline
                            ? request.deadline
                            : (config_.default_deadline ? std::optional(active->arrival + *config_.default_deadline)
                                                        : std::nullopt);
  active->seq->set_deadline(deadline);
  auto stream = std::make_shared<RequestStream>(request.request_id, 1, config_.stream_capacity);
  active->stream = stream;

  if (auto reason = death_reason()) return refused_dead(*reason);
  auto item = std::make_unique<InboxItem>();
  item->first_chunk_frames = std::max(request.first_chunk_frames, 1);
  item->chunk_frames = std::max(request.chunk_frames, 1);
  item->active = std::move(active);
  std::vector<Queued> items;
  items.push_back(std::move(item));
  SubmitResult out = shell_.push(std::move(items), {request.request_id}, 1);
  if (out.ok()) out.stream = std::move(stream);
  return out;
}

bool SpeechEngine::abort(std::string_view request_id) { return shell_.abort(request_id); }

EngineStats SpeechEngine::stats() const { return shell_.stats(); }

EngineHealth SpeechEngine::health(std::chrono::nanoseconds step_timeout) const {
  if (auto reason = death_reason()) return {false, "dead", *reason};
  return shell_.health(step_timeout);
}

std::optional<std::string> SpeechEngine::death_reason() const {
  if (auto reason = shell_.death_reason()) return reason;
  // The engine thread may be asleep when the codec thread stops: it learns of it
  // at its next pass, this says it at once.
  if (auto codec_failure = codec_worker_->failure()) return kDeathPrefix + *codec_failure;
  return std::nullopt;
}

bool SpeechEngine::is_stopping() const { return shell_.is_stopping(); }

// The engine thread; an exception escaping it (or the codec thread's failure,
// rethrown here) is the shell's death: die() ends what is held.
void SpeechEngine::loop() {
  while (drain_inbox()) {
    if (auto codec_failure = codec_worker_->failure()) throw std::runtime_error(*codec_failure);
    check_cancellations();
    if (!scheduler_->has_unfinished()) {
      publish_stats(nullptr);
      shell_.wait_for_work();
      continue;
    }
    shell_.begin_step();
    ScheduledStep step = scheduler_->schedule(Clock::now());
    shell_.set_num_waiting(scheduler_->num_waiting());
    for (const SequencePtr& seq : step.finished) {  // aborted or timed out
      const FinishReason reason = seq->finish_reason();
      finish_request(seq->request_id(), reason, reason == FinishReason::timeout ? "the request deadline passed" : "");
    }
    if (!step.empty()) {
      // A frame of the last step that completes a first audio chunk is decoded first.
      if (turns_->enabled()) codec_worker_->yield_to_first_audio(kFirstAudioYield);
      try {
        ComputeTurns::Turn turn(*turns_);
        run_step(step);
      } catch (const std::exception& e) {
        fail_step(step, e.what());
      } catch (...) {
        fail_step(step, "an exception of unknown type");
      }
    }
    shell_.end_step();
    publish_stats(&step);
    if (step.empty() && scheduler_->has_unfinished()) shell_.wait_for_work(std::chrono::milliseconds(1));
  }
  shutdown(FinishReason::abort, "the server is shutting down");
}

// Something outside a step threw, or the codec thread stopped: the engine's state
// can no longer be trusted. The shell takes no more work and says why; everything
// held ends with "error".
void SpeechEngine::die(const std::string& reason, std::vector<Queued> queued) {
  spdlog::critical("model {}: {}", config_.model_name, reason);
  end_queued(std::move(queued), FinishReason::error, reason);
  shutdown(FinishReason::error, reason);
}

bool SpeechEngine::drain_inbox() {
  auto drained = shell_.drain();
  for (Queued& item : drained.items) {
    Active& a = *item->active;
    const AddResult added = scheduler_->add(a.seq);
    if (!added.ok()) {  // the checks at submit make this rare: say why and end it
      ChoiceFinish finish;
      finish.reason = FinishReason::error;
      finish.error = added.message;
      a.stream->push_finish(std::move(finish));
      shell_.release(a.id);
      shell_.count_rejected();
      continue;
    }
    codec_worker_->begin(a.id, a.stream, a.arrival, item->first_chunk_frames, item->chunk_frames,
                         a.prompt.ref_codes);
    active_.emplace(a.id, std::move(item->active));
  }
  for (const std::string& id : drained.aborts) {
    auto it = active_.find(id);
    if (it != active_.end() && !it->second->seq->is_finished()) scheduler_->abort(id);
  }
  shell_.set_num_waiting(scheduler_->num_waiting());
  return drained.go_on;
}

void SpeechEngine::check_cancellations() {
  for (auto& [id, active] : active_) {
    if (active->stream->is_cancelled() && !active->seq->is_finished()) scheduler_->abort(id);
  }
}

// Each scheduled sequence's rows of this step (prompt chunks, recomputes after a
// preemption, feedback of its last frame: talker_step.h), one talker forward.
void SpeechEngine::run_step(ScheduledStep& step) {
  const TtsConfig& tc = model_.config();
  const int32_t groups = tc.num_code_groups;
  std::vector<Active*> rows_of;  // per scheduled sequence
  TalkerStepBuilder builder(tc, config_.block_size, talker_step_);
  for (const ScheduledSequence& ss : step.seqs) {
    Active& a = *active_.at(ss.seq->request_id());
    rows_of.push_back(&a);
    builder.add(a.prompt, a.frames, ss.start_position, ss.num_new_tokens, ss.block_table);
  }
  builder.finish();

  const int64_t vocab = tc.talker.vocab_size;
  const size_t n = step.seqs.size();
  logits_.resize(n * static_cast<size_t>(vocab));
  talker_->forward(talker_step_, *cache_, logits_);

  // Codebook 0 for the sequences whose chunk reached their last row.
  const int32_t eos = static_cast<int32_t>(tc.codec.eos);
  std::vector<int32_t> sampled;
  std::vector<int32_t> batch_rows, batch_c0;
  std::vector<size_t> sampling;  // indices into step.seqs
  for (size_t i = 0; i < n; ++i) {
    if (!step.seqs[i].samples) continue;
    Active& a = *rows_of[i];
    const std::span<float> row(logits_.data() + i * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    suppress_control_codes(tc, row);
    const int32_t c0 = talker_sampler_->sample(row, a.talker, {}, a.c0_history, a.rng).token;
    sampled.push_back(c0);
    sampling.push_back(i);
    if (c0 != eos) {
      batch_rows.push_back(static_cast<int32_t>(i));
      batch_c0.push_back(c0);
    }
  }
  // Codebooks 1..G-1 of every frame of this step in one batched pass.
  std::vector<int32_t> codes(batch_rows.size() * static_cast<size_t>(groups));
  if (!batch_rows.empty()) {
    predictor_->predict(talker_->final_hidden(), batch_rows, batch_c0,
                        [&](int64_t b, int32_t, std::span<const float> logits) {
                          Active& a = *rows_of[static_cast<size_t>(batch_rows[static_cast<size_t>(b)])];
                          return predictor_sampler_->sample(logits, a.predictor, {}, {}, a.rng).token;
                        },
                        codes);
  }

  // Finishes on max frames ("length") are read back from each sequence below.
  scheduler_->update(step, sampled);
  size_t next = 0;
  int64_t num_frames = 0;
  for (size_t s = 0; s < sampling.size(); ++s) {
    Active& a = *rows_of[sampling[s]];
    if (sampled[s] == eos) {
      scheduler_->finish(a.seq, FinishReason::stop);
      finish_request(a.id, FinishReason::stop, "");
      continue;
    }
    const auto begin = codes.begin() + static_cast<std::ptrdiff_t>(next * static_cast<size_t>(groups));
    ++next;
    ++num_frames;
    a.frames.insert(a.frames.end(), begin, begin + groups);
    a.c0_history.push_back(sampled[s]);
    if (a.c0_history.size() == 1 && observer_) observer_->on_first_token(seconds_between(a.arrival, Clock::now()));
    codec_worker_->add_frame(a.id, std::span<const int32_t>(&*begin, static_cast<size_t>(groups)));
    if (a.seq->is_finished()) finish_request(a.id, a.seq->finish_reason(), "");
  }
  if (speech_observer_ && num_frames > 0) speech_observer_->on_speech_step(num_frames);
}

// The end of a request on the engine thread: the codec worker sends what is still
// to decode (unless aborted), then the finish.
void SpeechEngine::finish_request(std::string id, FinishReason reason, std::string error) {
  // `id` is a copy: callers pass the Active's own id, which the erase below frees.
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active& a = *it->second;
  ChoiceFinish finish;
  finish.reason = reason;
  finish.num_prompt_tokens = a.num_input_tokens;
  finish.num_completion_tokens = static_cast<int64_t>(a.c0_history.size());
  finish.error = std::move(error);
  if (observer_) {
    RequestMetrics m;
    m.request_id = id;
    m.finish_reasons = {reason};
    m.num_prompt_tokens = static_cast<int64_t>(a.prompt.rows.size());
    m.num_generation_tokens = finish.num_completion_tokens;
    const auto now = Clock::now();
    if (auto first = a.seq->first_scheduled_time()) m.queue_time_s = seconds_between(a.arrival, *first);
    m.e2e_s = seconds_between(a.arrival, now);
    observer_->on_request_finished(m);
  }
  codec_worker_->end(id, std::move(finish), /*decode_pending=*/reason != FinishReason::abort);
  active_.erase(it);
  shell_.release(id);
}

void SpeechEngine::fail_step(const ScheduledStep& step, const std::string& what) {
  spdlog::error("model {}: a speech step failed: {}", config_.model_name, what);
  for (const ScheduledSequence& ss : step.seqs) {
    if (!ss.seq->is_finished()) scheduler_->finish(ss.seq, FinishReason::error);
    finish_request(ss.seq->request_id(), FinishReason::error, "the speech step failed: " + what);
  }
}

void SpeechEngine::publish_stats(const ScheduledStep* step) {
  const SchedulerStats s = scheduler_->stats();
  shell_.publish(engine_stats(s, static_cast<int32_t>(active_.size()), num_blocks_, config_.block_size, kv_bytes_));
  if (step != nullptr && !step->empty() && observer_) {
    observer_->on_step(StepMetrics{.num_batched_tokens = step->num_batched_tokens,
                                   .num_running = s.num_running,
                                   .num_waiting = s.num_waiting,
                                   .kv_cache_usage = s.kv_cache_usage,
                                   .num_preempted = static_cast<int32_t>(step->preempted.size())});
  }
}

// Requests that were queued but never reached the engine thread end with `reason`.
void SpeechEngine::end_queued(std::vector<Queued> queued, FinishReason reason, const std::string& why) {
  for (Queued& item : queued) {
    ChoiceFinish finish;
    finish.reason = reason;
    finish.error = why;
    item->active->stream->push_finish(std::move(finish));
    shell_.release(item->active->id);
  }
}

// Every request the engine thread holds ends with `reason` ("abort" for a stop,
// "error" for a death); the shell refuses later submits.
void SpeechEngine::shutdown(FinishReason reason, const std::string& why) {
  std::vector<std::string> ids;
  for (const auto& [id, active] : active_) ids.push_back(id);
  for (const std::string& id : ids) {
    try {
      scheduler_->abort(id);
      finish_request(id, reason, why);
    } catch (...) {
      // One request's finish failing (an observer that throws) must not leave the
      // others waiting for theirs.
      spdlog::error("model {}: finishing speech request {} failed", config_.model_name, id);
    }
  }
  publish_stats(nullptr);
}

}  // namespace sluice::engine::tts
