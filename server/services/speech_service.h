#pragma once
// The speech side of one served Qwen3-TTS checkpoint: the talker and code predictor
// on one backend, the codec decoder on a second backend of the same kind (its own
// compute threads, so decoding never waits for a talker step), the voice table, the
// SpeechEngine and its metrics (the shared sluice_* engine series and the speech
// ones). ModelServices (model_service.h) holds these beside the text models.
//
// A Base checkpoint also gets what voice cloning needs: a VoiceCloner (speaker and
// codec encoders on a backend of their own), a one-thread pool it runs on, so a
// clip's encoding waits neither on nor for the HTTP threads or the prepare pool,
// and the store of uploaded voices.
//
// Immutable after load() apart from its engine, whose submit() and stats() any
// thread may call. stop() is for the shutdown path only.
#include <prometheus/registry.h>

#include <chrono>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "config/config.h"
#include "engine/engine_shell.h"
#include "engine/loader/tensor_set.h"
#include "server/services/register_model.h"
#include "engine/tts/codec/codec_decoder.h"
#include "engine/tts/serving/speech_engine.h"
#include "engine/tts/model/tts_model.h"
#include "server/metrics/engine_metrics.h"
#include "server/metrics/speech_metrics.h"
#include "server/services/prep_pool.h"
#include "server/services/speech_voices.h"
#include "server/services/voice_cloner.h"
#include "server/services/voice_store.h"

namespace sluice::server {

// What a speech engine is given from the daemon's config: the KV budget when one is
// set, at most 32 running voices, the queue limit, the request timeout as the
// deadline of requests that carry none, the KV block size.
engine::tts::SpeechEngineConfig speech_engine_config(const std::string& model_id, const config::Config& config);

class SpeechService {
 public:
  // Loads the checkpoint folder (quantized at load when the entry's quantize says
  // so), checks the entry's voice mapping against its speakers and starts the
  // engine. Throws std::exception naming the model and what is wrong.
  // On the CPU, the engine's steps and codec passes take turns of `cpu_turns` (shared
  // by the process's CPU engines; null: the engine's own).
  static std::unique_ptr<SpeechService> load(const server::LoadedModel& loaded, const config::Config& config,
                                             const config::ModelConfig& entry, prometheus::Registry& registry,
                                             engine::ComputeTurns* cpu_turns = nullptr);
  ~SpeechService();  // stop()

  const std::string& id() const { return id_; }
  engine::tts::SpeechEngine& engine() { return *engine_; }
  const engine::tts::TtsConfig& tts_config() const { return model_->config(); }
  const SpeechVoices& voices() const { return *voices_; }
  // Base checkpoints only (null for the others): voice cloning.
  bool clones_voices() const { return cloner_ != nullptr; }
  VoiceCloner* cloner() const { return cloner_.get(); }
  PrepPool* clone_pool() const { return clone_pool_.get(); }
  VoiceStore* voice_store() const { return voice_store_.get(); }
  int32_t sample_rate() const { return engine_->sample_rate(); }
  // The text tokenizer the prompts are built with (engine::tts::build_prompt).
  const std::optional<tokenizer::Tokenizer>& tokenizer() const { return model_->tokenizer(); }
  // Samples of audio per codec frame (1920 at 24 kHz: 80 ms).
  int64_t samples_per_frame() const { return codec_->config().samples_per_frame; }

  void refresh_metrics();
  engine::EngineHealth health(std::chrono::nanoseconds step_timeout) const { return engine_->health(step_timeout); }
  // Finishes the requests in flight ("abort") and joins the engine's threads.
  void stop();

 private:
  SpeechService() = default;
  static void load_cloning(SpeechService& service, const std::filesystem::path& dir, const backends::BackendSpec& spec,
                           const config::Config& config, const config::ModelConfig& entry,
                           engine::ComputeTurns* cpu_turns);

  std::string id_;
  std::unique_ptr<backends::Backend> talker_backend_;
  std::unique_ptr<backends::Backend> codec_backend_;
  std::unique_ptr<engine::tts::TtsModel> model_;
  std::unique_ptr<loader::TensorSet> codec_tensors_;  // the codec's weights view these bytes
  std::unique_ptr<engine::tts::CodecDecoder> codec_;
  std::unique_ptr<SpeechVoices> voices_;
  std::unique_ptr<VoiceCloner> cloner_;
  std::unique_ptr<VoiceStore> voice_store_;
  std::unique_ptr<PrepPool> clone_pool_;  // after the cloner: joined before it goes
  std::unique_ptr<EngineMetrics> metrics_;
  std::unique_ptr<SpeechMetrics> speech_metrics_;
  std::unique_ptr<engine::tts::SpeechEngine> engine_;  // declared last: stopped before the rest goes
};

}  // namespace sluice::server
