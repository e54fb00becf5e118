#include "engine/tts/serving/speech_codec_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "engine/tts/serving/speech_engine.h"

namespace sluice::engine::tts {
namespace {

// Reference frames an ICL request primes its stream with per pass: a 10 s reference
// (125 frames, seconds of codec work on a CPU) in one call would hold every other
// voice's audio back that long; 8 frames cost about as much as a voice's chunk.
constexpr size_t kPrimeFramesPerPass = 8;

}  // namespace

struct SpeechCodecWorker::Job {
  std::string id;
  std::shared_ptr<RequestStream> stream;
  Clock::time_point arrival;
  int32_t first_chunk_frames = 1;
  int32_t chunk_frames = 4;
  std::optional<CodecStream> codec;  // made on the worker thread at the first decode
  std::vector<int32_t> ref_codes;    // decoded into `codec` before the first frame, their audio dropped
  size_t ref_primed = 0;             // of ref_codes' values, those decoded so far
  std::vector<int32_t> pending;      // codes of the frames not decoded yet
  int64_t frames_sent = 0;
  bool busy = false;    // decoding outside the lock
  bool ended = false;   // no more frames will come
  bool drop = false;    // ended by an abort: pending frames are not decoded
  ChoiceFinish finish;  // pushed once ended and drained

  size_t pending_frames(size_t groups) const { return pending.size() / groups; }
};

SpeechCodecWorker::SpeechCodecWorker(CodecDecoder& codec, int64_t max_decode_frames, SpeechObserver* observer,
                                     ComputeTurns& turns)
    : codec_(codec),
      max_decode_frames_(std::max<int64_t>(1, max_decode_frames)),
      observer_(observer),
      turns_(turns),
      groups_(static_cast<size_t>(codec.config().num_quantizers)),
      seconds_per_frame_(static_cast<double>(codec.config().samples_per_frame) /
                         static_cast<double>(codec.config().output_sample_rate)) {}

SpeechCodecWorker::~SpeechCodecWorker() { stop(); }

void SpeechCodecWorker::start() {
  std::lock_guard lock(mutex_);
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { loop(); });
}

void SpeechCodecWorker::stop() {
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, job] : jobs_) {
      if (job->ended) continue;
      job->ended = true;
      job->drop = true;
      job->finish.reason = FinishReason::abort;
      job->finish.error = "the server is shutting down";
    }
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SpeechCodecWorker::begin(const std::string& id, std::shared_ptr<RequestStream> stream,
                              Clock::time_point arrival, int32_t first_chunk_frames, int32_t chunk_frames,
                              std::vector<int32_t> ref_codes) {
  if (failed_.load()) {
    // Nothing would ever decode it or push its finish.
    ChoiceFinish finish;
    finish.reason = FinishReason::error;
    std::lock_guard lock(mutex_);
    finish.error = failure_;
    stream->push_finish(std::move(finish));
    return;
  }
  auto job = std::make_unique<Job>();
  job->id = id;
  job->stream = std::move(stream);
  job->arrival = arrival;
  job->first_chunk_frames = std::max(first_chunk_frames, 1);
  job->chunk_frames = std::max(chunk_frames, 1);
  job->ref_codes = std::move(ref_codes);
  const bool prime = !job->ref_codes.empty();
  {
    std::lock_guard lock(mutex_);
    order_.push_back(id);
    jobs_[id] = std::move(job);
  }
  if (prime) cv_.notify_one();  // the reference goes into the stream while the talker starts
}

void SpeechCodecWorker::add_frame(const std::string& id, std::span<const int32_t> codes) {
  {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second->ended || it->second->drop) return;
    it->second->pending.insert(it->second->pending.end(), codes.begin(), codes.end());
  }
  cv_.notify_one();
}

void SpeechCodecWorker::end(const std::string& id, ChoiceFinish finish, bool decode_pending) {
  {
    std::lock_guard lock(mutex_);
    auto it = jobs_.find(id);
    if (it == jobs_.end() || it->second->ended) return;
    Job& job = *it->second;
    job.ended = true;
    job.drop = !decode_pending;
    // A decode failure already said what went wrong: keep its reason and message.
    if (job.finish.reason == FinishReason::error) {
      finish.reason = FinishReason::error;
      finish.error = std::move(job.finish.error);
    }
    job.finish = std::move(finish);
  }
  cv_.notify_one();
}

// Under mutex_: a job whose first audio could be decoded now, by a pass not yet in line.
bool SpeechCodecWorker::first_audio_waiting() const {
  return std::ranges::any_of(jobs_, [&](const auto& entry) {
    const Job& job = *entry.second;
    if (job.busy || job.drop || job.frames_sent > 0 || !job.ref_codes.empty()) return false;
    const size_t pending = job.pending_frames(groups_);
    return pending >= static_cast<size_t>(job.first_chunk_frames) || (job.ended && pending > 0);
  });
}

void SpeechCodecWorker::yield_to_first_audio(std::chrono::milliseconds limit) {
  std::unique_lock lock(mutex_);
  lined_up_.wait_for(lock, limit, [&] { return failed_.load() || !first_audio_waiting(); });
}

size_t SpeechCodecWorker::num_jobs() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

std::optional<std::string> SpeechCodecWorker::failure() const {
  if (!failed_.load()) return std::nullopt;
  std::lock_guard lock(mutex_);
  return failure_;
}

// What one pass decodes for one job: generated frames, or (prime) a piece of its
// ICL reference.
struct SpeechCodecWorker::Work {
  Job* job = nullptr;
  bool prime = false;
  std::vector<int32_t> codes;
  size_t frames = 0;
  bool delivered = false;
  bool primed = false;  // the reference is all in the stream now
  std::string failure;
};

// Under mutex_: finishes every job that is done, then takes every job that has a
// chunk's worth of frames (any frames once ended; any frames at all once another
// job past its first audio has a chunk) or a reference still to prime
// (from its begin, while the talker makes its first frames), those still waiting for
// their first audio first: time to first audio is what a listener notices.
std::vector<SpeechCodecWorker::Work> SpeechCodecWorker::take_ready() {
  const std::vector<std::string> ids = order_;
  for (const std::string& id : ids) {
    Job& job = *jobs_.at(id);
    if (!job.busy && job.ended && (job.drop || job.pending.empty())) finish_job(job);
  }
  // Once one voice past its first audio has a chunk ready, every such voice with
  // frames pending decodes in the same call: a voice that joins short of its chunk
  // starts counting afresh with the others, so from then on their chunks fill in the
  // same step and decode together (CodecDecoder::decode_together).
  const bool chunk_ready = std::ranges::any_of(jobs_, [&](const auto& entry) {
    const Job& job = *entry.second;
    const size_t pending = job.pending_frames(groups_);
    return !job.busy && job.frames_sent > 0 && job.ref_codes.empty() && pending > 0 &&
           (job.ended || pending >= static_cast<size_t>(job.chunk_frames));
  });
  std::vector<Work> out;
  for (const bool first_audio : {true, false}) {
    for (const std::string& id : order_) {
      Job& job = *jobs_.at(id);
      if (job.busy || (job.frames_sent == 0) != first_audio) continue;
      if (!job.ref_codes.empty()) {
        if (job.drop) continue;
        Work w;
        w.job = &job;
        w.prime = true;
        const auto begin = job.ref_codes.begin() + static_cast<std::ptrdiff_t>(job.ref_primed);
        w.codes.assign(begin, begin + static_cast<std::ptrdiff_t>(std::min(kPrimeFramesPerPass * groups_,
                                                                           job.ref_codes.size() - job.ref_primed)));
        w.frames = w.codes.size() / groups_;
        job.busy = true;
        out.push_back(std::move(w));
        continue;
      }
      const size_t pending = job.pending_frames(groups_);
      const auto target = static_cast<size_t>(first_audio ? job.first_chunk_frames : chunk_ready ? 1 : job.chunk_frames);
      if (pending == 0 || (!job.ended && pending < target)) continue;
      Work w;
      w.job = &job;
      w.frames = std::min(pending, static_cast<size_t>(max_decode_frames_));
      const auto end = job.pending.begin() + static_cast<std::ptrdiff_t>(w.frames * groups_);
      w.codes.assign(job.pending.begin(), end);
      job.pending.erase(job.pending.begin(), end);
      job.busy = true;
      out.push_back(std::move(w));
    }
  }
  return out;
}

void SpeechCodecWorker::finish_job(Job& job) {
  if (job.drop) job.finish.num_completion_tokens = std::min(job.finish.num_completion_tokens, job.frames_sent);
  const double audio_s = static_cast<double>(job.frames_sent) * seconds_per_frame_;
  const double wall_s = std::chrono::duration<double>(Clock::now() - job.arrival).count();
  if (observer_) observer_->on_speech_finished(job.finish.reason, audio_s, wall_s);
  job.stream->push_finish(std::move(job.finish));
  order_.erase(std::find(order_.begin(), order_.end(), job.id));
  jobs_.erase(job.id);  // job is gone from here on
}

// Outside the lock, within the pass's turn: a piece of the reference into the
// stream (a kept primed stream when there is one: all of it at once), or frames
// decoded and their audio handed out at once. job.ref_codes changes only under the
// lock, after the pass.
void SpeechCodecWorker::prime(Work& w) {
  Job& job = *w.job;
  if (!job.codec) {
    if (std::optional<CodecStream> kept = primed_.find(job.ref_codes)) {
      job.codec.emplace(std::move(*kept));
      w.primed = true;
      if (observer_) observer_->on_reference_primed(true);
      return;
    }
    job.codec.emplace(codec_.start());
  }
  std::vector<float> dropped;  // the reference's own audio
  job.codec->decode(w.codes, dropped);
  if (static_cast<size_t>(job.codec->num_frames()) * groups_ == job.ref_codes.size()) {
    w.primed = true;
    primed_.keep(job.ref_codes, *job.codec);
    if (observer_) observer_->on_reference_primed(false);
  }
}

// Outside the lock, within the pass's turn: the generated frames of `works` (none a
// prime, each its own job) decoded in one call, the stages that read many weights for
// a few rows running once for every voice (CodecDecoder::decode_together), and each
// job's audio handed out. Codes the codec refuses (it checks them all before any
// kernel runs) are decoded job by job instead, so only the job they belong to fails.
void SpeechCodecWorker::decode(std::span<Work* const> works) {
  std::vector<AudioDelta> deltas(works.size());
  std::vector<CodecPiece> pieces;
  for (size_t i = 0; i < works.size(); ++i) {
    Job& job = *works[i]->job;
    if (!job.codec) job.codec.emplace(codec_.start());
    deltas[i].num_frames = static_cast<int64_t>(works[i]->frames);
    pieces.push_back({&*job.codec, works[i]->codes, &deltas[i].pcm});
  }
  auto fail = [](Work& w, std::string why) { w.failure = std::move(why); };
  try {
    codec_.decode_together(pieces);
  } catch (const std::invalid_argument& e) {
    if (works.size() == 1) {
      fail(*works[0], e.what());
    } else {
      for (Work* w : works) decode({&w, 1});
      return;
    }
  } catch (const std::exception& e) {
    for (Work* w : works) fail(*w, e.what());
  } catch (...) {
    for (Work* w : works) fail(*w, "an exception of unknown type");
  }
  for (size_t i = 0; i < works.size(); ++i) deliver(*works[i], std::move(deltas[i]));
}

// A job's decoded frames to its stream (or, when its decoding failed, its cancel).
void SpeechCodecWorker::deliver(Work& w, AudioDelta delta) {
  Job& job = *w.job;
  if (!w.failure.empty()) {
    spdlog::error("speech request {}: decoding failed: {}", job.id, w.failure);
    job.stream->cancel();
    return;
  }
  const bool first = job.frames_sent == 0;  // only this thread writes frames_sent
  w.delivered = job.stream->push_delta(std::move(delta));
  if (!w.delivered) job.stream->cancel();  // the client stopped reading: the engine aborts it
  if (w.delivered && first && observer_)
    observer_->on_first_audio(std::chrono::duration<double>(Clock::now() - job.arrival).count());
}

// A piece of an ICL reference into its job's stream; a failure fails the job.
void SpeechCodecWorker::prime_or_fail(Work& w) {
  try {
    prime(w);
    return;
  } catch (const std::exception& e) {
    w.failure = e.what();
  } catch (...) {
    w.failure = "an exception of unknown type";
  }
  spdlog::error("speech request {}: decoding failed: {}", w.job->id, w.failure);
  w.job->stream->cancel();
}

void SpeechCodecWorker::loop() {
  // Nothing may leave the thread: an exception escaping it ends the process.
  try {
    run_passes();
  } catch (const std::exception& e) {
    fail_all(e.what());
  } catch (...) {
    fail_all("an exception of unknown type");
  }
}

// The thread is done: every request it holds ends with "error" (no more audio can
// come), and failure() says why.
void SpeechCodecWorker::fail_all(const std::string& why) {
  spdlog::critical("the speech codec thread stopped: {}", why);
  std::lock_guard lock(mutex_);
  failure_ = "the codec thread stopped: " + why;
  failed_.store(true);
  for (auto& [id, job] : jobs_) {
    ChoiceFinish finish = std::move(job->finish);
    finish.reason = FinishReason::error;
    finish.error = failure_;
    finish.num_completion_tokens = job->frames_sent;
    try {
      job->stream->push_finish(std::move(finish));
    } catch (...) {
      spdlog::error("speech request {}: its finish could not be pushed", id);
    }
  }
  jobs_.clear();
  order_.clear();
}

// One pass at a time: every ready job decoded once within one compute turn, so a
// step of N new frames is followed by one pass over the N voices.
void SpeechCodecWorker::run_passes() {
  std::unique_lock lock(mutex_);
  for (;;) {
    std::vector<Work> work = take_ready();
    if (work.empty()) {
      if (stopping_ && jobs_.empty()) return;
      cv_.wait(lock);
      continue;
    }
    // A pass that makes some request's first audio goes ahead of the waiting steps;
    // it takes its place in line before the lock goes, so the engine, waiting in
    // yield_to_first_audio(), lines up behind it.
    const bool first_audio =
        std::ranges::any_of(work, [](const Work& w) { return !w.prime && w.job->frames_sent == 0; });
    {
      ComputeTurns::Turn turn(turns_, first_audio, std::defer_lock);
      lock.unlock();
      if (first_audio) lined_up_.notify_all();
      turn.wait();
      // The voices whose first audio this is, together; then the references (each
      // primes its own stream); then every other voice, together.
      std::vector<Work*> first_pieces, primes, later_pieces;
      for (Work& w : work)
        (w.prime ? primes : w.job->frames_sent == 0 ? first_pieces : later_pieces).push_back(&w);
      if (!first_pieces.empty()) decode(first_pieces);
      for (Work* w : primes) prime_or_fail(*w);
      if (!later_pieces.empty()) decode(later_pieces);
    }
    lock.lock();
    for (Work& w : work) {
      Job& job = *w.job;
      job.busy = false;
      if (w.prime && w.failure.empty()) {
        job.ref_primed += w.codes.size();
        if (w.primed) job.ref_codes = {};
      }
      if (w.delivered) job.frames_sent += static_cast<int64_t>(w.frames);
      if (!w.failure.empty()) {
        job.finish.reason = FinishReason::error;
        job.finish.error = "decoding the audio failed: " + w.failure;
        job.drop = true;
        job.pending.clear();
      }
    }
  }
}

}  // namespace sluice::engine::tts
