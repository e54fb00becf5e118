#pragma once
// The codec side of SpeechEngine: a thread that turns each speech request's frames
// into PCM with its own CodecStream and pushes them as AudioDelta events, then the
// request's finish. The engine thread hands it work (begin / add_frame / end); the
// worker decodes on the codec's backend, which nothing else uses, so decoding runs
// beside the talker and code predictor instead of between their steps.
//
// Chunking, per request: the first first_chunk_frames frames go out alone (time to
// first audio), then chunk_frames at a time; frames that piled up while the worker
// was busy go in one call (up to max_decode_frames), which costs less per frame.
// The worker runs in passes: each decodes every request that has a chunk ready,
// once, those still waiting for their first audio first, so a long utterance never
// holds up another voice. The voices of a pass decode together (one call for those
// making their first audio, one for the rest: CodecDecoder::decode_together), so
// the codec's weights that a few frames barely use are read once for all of them. Streaming is exact (codec_decoder.h): the audio equals
// decoding every frame at once, whatever the chunking.
//
// A full RequestStream (a client not reading) cancels the request: the engine then
// aborts it. An exception that escapes a pass (an observer that throws, out of
// memory) stops the thread: every request it holds ends with "error" and
// failure() says why. Thread-safe; stop() joins after pushing every outstanding
// finish.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/serving/primed_codec_cache.h"
#include "engine/compute_turns.h"

namespace sluice::engine::tts {

class SpeechObserver;

class SpeechCodecWorker {
 public:
  // Each decode call takes a turn of `turns` (shared with the engine's steps).
  SpeechCodecWorker(CodecDecoder& codec, int64_t max_decode_frames, SpeechObserver* observer, ComputeTurns& turns);
  ~SpeechCodecWorker();  // stop()

  void start();
  // Aborts every request still decoding (its finish says "abort"), then joins.
  void stop();

  // ref_codes [frames, num_quantizers]: an ICL prompt's reference codes. The official
  // package decodes them ahead of the generated frames and drops their samples
  // (Qwen3TTSModel.generate_voice_clone); the stream decodes exactly as one pass, so
  // decoding them first and dropping that audio gives the same samples. Empty:
  // nothing to prime. A reference seen lately starts from its kept primed stream
  // (primed_codec_cache.h).
  void begin(const std::string& id, std::shared_ptr<RequestStream> stream, Clock::time_point arrival,
             int32_t first_chunk_frames, int32_t chunk_frames, std::vector<int32_t> ref_codes = {});
  void add_frame(const std::string& id, std::span<const int32_t> codes);
  // No more frames: decodes what is pending (unless decode_pending is false, for an
  // abort), then pushes `finish`.
  void end(const std::string& id, ChoiceFinish finish, bool decode_pending);

  // Waits (at most `limit`) until no request's first audio is ready to decode without
  // its pass in line for a compute turn. The engine calls it before taking the turn
  // of its next step: a frame it just handed over then becomes audio before that
  // step, not after it.
  void yield_to_first_audio(std::chrono::milliseconds limit);

  // Requests begun and not yet finished on the stream.
  size_t num_jobs() const;

  // Why the worker thread stopped on an exception; nullopt while it runs. Every
  // request it held then ended with "error", and requests begun later end so at
  // once: the engine, which checks this, must stop too.
  std::optional<std::string> failure() const;

 private:
  struct Job;
  struct Work;
  void loop();
  void run_passes();
  void fail_all(const std::string& why);
  std::vector<Work> take_ready();  // under mutex_
  bool first_audio_waiting() const;  // under mutex_
  void finish_job(Job& job);       // under mutex_
  void decode(std::span<Work* const> works);
  void deliver(Work& work, AudioDelta delta);
  void prime(Work& work);
  void prime_or_fail(Work& work);

  CodecDecoder& codec_;
  const int64_t max_decode_frames_;
  SpeechObserver* observer_;
  ComputeTurns& turns_;
  const size_t groups_;
  const double seconds_per_frame_;
  PrimedCodecCache primed_;  // the worker thread's alone

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::condition_variable lined_up_;  // a first-audio pass took its place in line
  std::unordered_map<std::string, std::unique_ptr<Job>> jobs_;  // guarded by mutex_
  std::vector<std::string> order_;                              // arrival order, guarded
  bool stopping_ = false;
  bool started_ = false;
  std::atomic<bool> failed_{false};
  std::string failure_;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace sluice::engine::tts
