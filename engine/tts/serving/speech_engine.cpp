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

SubmitResult refused(SubmitStatus status, std::string message, std::string param = {}) {
  SubmitResult out;
  out.status = status;
  out.message = std::move(message);
  out.param = std::move(param);
  return out;
}

// After the engine died: said with a code the routes tell apart from a shutdown.
SubmitResult refused_dead(const std::string& reason) {
  SubmitResult out = refused(SubmitStatus::shutting_down, reason);
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
    : model_(model), codec_(codec), config_(std::move(config)), observer_(observer), speech_observer_(speech_observer) {
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
  sc.kv = BlockPoolConfig{num_blocks_, config_.block_size, /*enable_prefix_caching=*/false};
  scheduler_ = std::make_unique<Scheduler>(sc);
  turns_ = config_.compute_turns;
  if (turns_ == nullptr) {
    own_turns_ = std::make_unique<ComputeTurns>(backend.device() == backends::DeviceKind::cpu &&
                                                codec_.backend().device() == backends::DeviceKind::cpu);
    turns_ = own_turns_.get();
  }
  codec_worker_ = std::make_unique<SpeechCodecWorker>(codec_, config_.max_decode_frames, speech_observer_, *turns_);
  stats_.num_kv_blocks = num_blocks_;
  stats_.block_size = config_.block_size;
  stats_.kv_cache_bytes = bytes_per_block * static_cast<uint64_t>(num_blocks_);
}

SpeechEngine::~SpeechEngine() { stop(); }

int32_t SpeechEngine::sample_rate() const { return static_cast<int32_t>(codec_.config().output_sample_rate); }

void SpeechEngine::start() {
  std::lock_guard lock(inbox_mutex_);
  if (started_) return;
  started_ = true;
  codec_worker_->start();
  thread_ = std::thread([this] { loop(); });
}

void SpeechEngine::stop() {
  std::lock_guard stop_lock(stop_mutex_);
  {
    std::lock_guard lock(inbox_mutex_);
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (codec_worker_) codec_worker_->stop();
}

SubmitResult SpeechEngine::submit(SpeechRequest request) {
  const TtsConfig& tc = model_.config();
  const auto reject = [&](std::string message, std::string param) {
    std::lock_guard lock(inbox_mutex_);
    ++num_rejected_;
    return refused(SubmitStatus::rejected, std::move(message), std::move(param));
  };
  if (auto error = check_sampling(request.tts)) return reject(error->message, error->param);
  std::variant<TtsPrompt, PromptError> built = PromptError{"this speech model has no tokenizer", "model"};
  if (request.prompt) {
    built = std::move(*request.prompt);
  } else if (model_.tokenizer()) {
    built = build_prompt(tc, *model_.tokenizer(), request.tts.prompt);
  }
  if (auto* error = std::get_if<PromptError>(&built)) return reject(error->message, error->param);
  int32_t max_frames = resolve_max_frames(tc, request.tts, config_.default_max_frames);
  const auto num_rows = static_cast<int64_t>(std::get<TtsPrompt>(built).rows.size());
  // A request that names no limit gets what the context leaves after its prompt.
  if (!request.tts.max_frames)
    max_frames = static_cast<int32_t>(std::clamp<int64_t>(max_model_len_ - num_rows, 1, max_frames));

  auto active = std::make_unique<Active>();
  active->id = request.request_id;
  active->prompt = std::get<TtsPrompt>(std::move(built));
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
  // Placeholder tokens: the scheduler only counts a speech sequence's rows.
  active->seq = std::make_shared<Sequence>(request.request_id, std::vector<int32_t>(static_cast<size_t>(num_rows), 0),
                                           params, active->arrival);
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
  {
    std::lock_guard lock(inbox_mutex_);
    if (dead_.load()) return refused_dead(dead_reason_);
    if (stopping_) return refused(SubmitStatus::shutting_down, "the server is shutting down");
    if (in_flight_ids_.count(request.request_id) != 0) {
      ++num_rejected_;
      return refused(SubmitStatus::rejected, "a request with this id is already in flight", "request_id");
    }
    if (num_waiting_ >= config_.max_waiting) {
      ++num_queue_full_;
      return refused(SubmitStatus::queue_full, "too many speech requests are waiting; retry later");
    }
    ++num_waiting_;
    ++num_submitted_;
    in_flight_ids_.insert(request.request_id);
    inbox_.push_back(std::move(item));
  }
  inbox_cv_.notify_one();
  SubmitResult out;
  out.stream = std::move(stream);
  return out;
}

EngineStats SpeechEngine::stats() const {
  std::lock_guard lock(stats_mutex_);
  EngineStats out = stats_;
  std::lock_guard inbox_lock(inbox_mutex_);
  out.num_pending = static_cast<int32_t>(inbox_.size());
  out.num_requests_submitted = num_submitted_;
  out.num_requests_rejected = num_rejected_;
  out.num_requests_queue_full = num_queue_full_;
  return out;
}

EngineHealth SpeechEngine::health(std::chrono::nanoseconds step_timeout) const {
  if (auto reason = death_reason()) return {false, "dead", *reason};
  return step_health(step_started_ns_.load(), step_timeout);
}

std::optional<std::string> SpeechEngine::death_reason() const {
  if (dead_.load()) {
    std::lock_guard lock(inbox_mutex_);
    return dead_reason_;
  }
  // The engine thread may be asleep when the codec thread stops: it learns of it
  // at its next pass, this says it at once.
  if (auto codec_failure = codec_worker_->failure()) return "the speech engine thread stopped: " + *codec_failure;
  return std::nullopt;
}

bool SpeechEngine::is_stopping() const {
  std::lock_guard lock(inbox_mutex_);
  return stopping_;
}

void SpeechEngine::loop() {
  // Nothing may leave the thread: an exception escaping it ends the process.
  std::string failure;
  try {
    while (drain_inbox()) {
      if (auto codec_failure = codec_worker_->failure()) throw std::runtime_error(*codec_failure);
      check_cancellations();
      if (!scheduler_->has_unfinished()) {
        publish_stats(nullptr);
        std::unique_lock lock(inbox_mutex_);
        inbox_cv_.wait(lock, [&] { return stopping_ || !inbox_.empty(); });
        continue;
      }
      step_started_ns_.store(steady_now_ns());
      ScheduledStep step = scheduler_->schedule(Clock::now());
      for (const SequencePtr& seq : step.finished) {  // aborted or timed out
        const FinishReason reason = seq->finish_reason();
        finish_request(seq->request_id(), reason,
                       reason == FinishReason::timeout ? "the request deadline passed" : "");
      }
      if (!step.empty()) {
        try {
          ComputeTurns::Turn turn(*turns_);
          run_step(step);
        } catch (const std::exception& e) {
          fail_step(step, e.what());
        } catch (...) {
          fail_step(step, "an exception of unknown type");
        }
      }
      step_started_ns_.store(0);
      publish_stats(&step);
      if (step.empty() && scheduler_->has_unfinished()) {
        std::unique_lock lock(inbox_mutex_);
        inbox_cv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return stopping_ || !inbox_.empty(); });
      }
    }
    shutdown(FinishReason::abort, "the server is shutting down");
    return;
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "an exception of unknown type";
  }
  die(failure);
}

// Something outside a step threw, or the codec thread stopped: the engine's state
// can no longer be trusted, so it takes no more work and ends everything it holds
// with "error"; health() and submit() say why from now on.
void SpeechEngine::die(const std::string& what) {
  {
    std::lock_guard lock(inbox_mutex_);
    dead_reason_ = "the speech engine thread stopped: " + what;
  }
  dead_.store(true);
  step_started_ns_.store(0);
  spdlog::critical("model {}: {}", config_.model_name, dead_reason_);
  try {
    shutdown(FinishReason::error, dead_reason_);
  } catch (...) {
    spdlog::critical("model {}: ending the requests in flight failed too", config_.model_name);
  }
}

bool SpeechEngine::drain_inbox() {
  std::vector<std::unique_ptr<InboxItem>> items;
  bool stopping = false;
  {
    std::lock_guard lock(inbox_mutex_);
    items.swap(inbox_);
    stopping = stopping_;
  }
  for (auto& item : items) {
    Active& a = *item->active;
    const AddResult added = scheduler_->add(a.seq);
    if (!added.ok()) {  // the checks at submit make this rare: say why and end it
      ChoiceFinish finish;
      finish.reason = FinishReason::error;
      finish.error = added.message;
      a.stream->push_finish(std::move(finish));
      std::lock_guard lock(inbox_mutex_);
      in_flight_ids_.erase(a.id);
      ++num_rejected_;
      continue;
    }
    codec_worker_->begin(a.id, a.stream, a.arrival, item->first_chunk_frames, item->chunk_frames);
    active_.emplace(a.id, std::move(item->active));
  }
  {
    std::lock_guard lock(inbox_mutex_);
    num_waiting_ = scheduler_->num_waiting() + static_cast<int32_t>(inbox_.size());
  }
  return !stopping;
}

void SpeechEngine::check_cancellations() {
  for (auto& [id, active] : active_) {
    if (active->stream->is_cancelled() && !active->seq->is_finished()) scheduler_->abort(id);
  }
}

// Row p of a sequence: a prompt row, or for p >= rows the feedback of frame
// p - rows: P(the next trailing text id or tts_pad) + C(c0) + the code predictor's
// embeddings of c1..c15. Feedback entries go last in codec_ids (TalkerStep's rule).
void SpeechEngine::run_step(ScheduledStep& step) {
  const TtsConfig& tc = model_.config();
  const int32_t groups = tc.num_code_groups;
  TalkerStep& ts = talker_step_;
  ts.clear();
  struct Feedback {
    int32_t row;
    const Active* active;
    size_t frame;
  };
  std::vector<Feedback> feedback;
  std::vector<Active*> rows_of;  // per scheduled sequence
  for (const ScheduledSequence& ss : step.seqs) {
    Active& a = *active_.at(ss.seq->request_id());
    rows_of.push_back(&a);
    backends::SequenceSlice slice;
    slice.query_begin = static_cast<int32_t>(ts.positions.size());
    slice.num_cached = static_cast<int32_t>(ss.start_position);
    slice.num_queries = static_cast<int32_t>(ss.num_new_tokens);
    slice.block_table = ss.block_table;
    const auto num_rows = static_cast<int64_t>(a.prompt.rows.size());
    for (int64_t i = 0; i < ss.num_new_tokens; ++i) {
      const int64_t p = ss.start_position + i;
      const auto row = static_cast<int32_t>(ts.positions.size());
      if (p < num_rows) {
        const PromptRow& pr = a.prompt.rows[static_cast<size_t>(p)];
        ts.text_of_row.push_back(pr.text < 0 ? -1 : static_cast<int32_t>(ts.text_ids.size()));
        if (pr.text >= 0) ts.text_ids.push_back(pr.text);
        ts.codec_of_row.push_back(pr.codec < 0 ? -1 : static_cast<int32_t>(ts.codec_ids.size()));
        if (pr.codec >= 0) ts.codec_ids.push_back(pr.codec);
      } else {
        const auto k = static_cast<size_t>(p - num_rows);
        const int32_t text = k < a.prompt.trailing_text.size() ? a.prompt.trailing_text[k] : tc.text.tts_pad;
        ts.text_of_row.push_back(static_cast<int32_t>(ts.text_ids.size()));
        ts.text_ids.push_back(text);
        ts.codec_of_row.push_back(-1);  // set below
        feedback.push_back({row, &a, k});
      }
      ts.positions.push_back(static_cast<int32_t>(p));
      ts.kv_slots.push_back(static_cast<int32_t>(step.slot_mapping[static_cast<size_t>(ss.query_start + i)]));
    }
    ts.logit_rows.push_back(slice.query_begin + slice.num_queries - 1);
    ts.sequences.push_back(std::move(slice));
  }
  const auto f = static_cast<int32_t>(feedback.size());
  ts.num_feedback = f;
  for (const Feedback& fb : feedback) {
    ts.codec_of_row[static_cast<size_t>(fb.row)] = static_cast<int32_t>(ts.codec_ids.size());
    ts.codec_ids.push_back(fb.active->frames[fb.frame * static_cast<size_t>(groups)]);
  }
  ts.feedback_codes.resize(static_cast<size_t>(f) * static_cast<size_t>(groups - 1));
  for (int32_t j = 1; j < groups; ++j)
    for (int32_t i = 0; i < f; ++i) {
      const Feedback& fb = feedback[static_cast<size_t>(i)];
      ts.feedback_codes[static_cast<size_t>((j - 1) * f + i)] =
          fb.active->frames[fb.frame * static_cast<size_t>(groups) + static_cast<size_t>(j)];
    }

  const int64_t vocab = tc.talker.vocab_size;
  const size_t n = step.seqs.size();
  logits_.resize(n * static_cast<size_t>(vocab));
  talker_->forward(ts, *cache_, logits_);

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
  std::lock_guard lock(inbox_mutex_);
  in_flight_ids_.erase(id);
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
  {
    std::lock_guard lock(stats_mutex_);
    stats_.num_running = s.num_running;
    stats_.num_waiting = s.num_waiting;
    stats_.num_active_requests = static_cast<int32_t>(active_.size());
    stats_.kv_cache_usage = s.kv_cache_usage;
    stats_.num_preemptions = s.num_preemptions;
    stats_.num_prompt_tokens = s.num_prompt_tokens;
    stats_.num_generation_tokens = s.num_generation_tokens;
    stats_.num_steps = s.num_steps;
    stats_.num_iteration_tokens = s.num_iteration_tokens;
    stats_.num_finished = s.num_finished;
  }
  if (step != nullptr && !step->empty() && observer_) {
    observer_->on_step(StepMetrics{.num_batched_tokens = step->num_batched_tokens,
                                   .num_running = s.num_running,
                                   .num_waiting = s.num_waiting,
                                   .kv_cache_usage = s.kv_cache_usage,
                                   .num_preempted = static_cast<int32_t>(step->preempted.size())});
  }
}

// Every request still queued or running ends with `reason` ("abort" for a stop,
// "error" for a death); later submits are refused.
void SpeechEngine::shutdown(FinishReason reason, const std::string& why) {
  std::vector<std::unique_ptr<InboxItem>> items;
  {
    std::lock_guard lock(inbox_mutex_);
    stopping_ = true;
    items.swap(inbox_);
  }
  for (auto& item : items) {
    ChoiceFinish finish;
    finish.reason = reason;
    finish.error = why;
    item->active->stream->push_finish(std::move(finish));
  }
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
