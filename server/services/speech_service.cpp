#include "server/services/speech_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "backends/backend_factory.h"
#include "engine/loader/quantize.h"
#include "engine/tts/codec/codec_config.h"

namespace sluice::server {

engine::tts::SpeechEngineConfig speech_engine_config(const std::string& model_id, const config::Config& config) {
  // More voices than this per step buy little: each adds a talker row and a code
  // predictor pass, and the codec decodes them one by one.
  constexpr int32_t kMaxSpeechSequences = 32;
  engine::tts::SpeechEngineConfig out;
  out.model_name = model_id;
  if (config.kv_cache_bytes > 0) out.kv_cache_bytes = config.kv_cache_bytes;
  out.block_size = config.block_size;
  out.max_num_seqs = std::min(config.max_num_seqs, kMaxSpeechSequences);
  out.max_num_batched_tokens = config.max_num_batched_tokens;
  out.max_waiting = config.max_waiting;
  out.default_deadline = std::chrono::milliseconds(static_cast<int64_t>(config.request_timeout_s * 1000.0));
  return out;
}

namespace {

// Where a model keeps its uploaded voices: its entry's voices_dir, else a folder
// per model under the global one (model ids may hold '/': it becomes '_'), else
// nowhere (memory only).
std::filesystem::path voices_dir_of(const std::string& model_id, const config::Config& config,
                                    const config::ModelConfig& entry) {
  if (!entry.voices_dir.empty()) return entry.voices_dir;
  if (config.voices_dir.empty()) return {};
  std::string folder = model_id;
  for (char& c : folder)
    if (c == '/' || c == '\\') c = '_';
  if (folder == "." || folder == "..") folder = "_" + folder;
  return std::filesystem::path(config.voices_dir) / folder;
}

}  // namespace

void SpeechService::load_cloning(SpeechService& service, const std::filesystem::path& dir,
                                 const backends::BackendSpec& spec, const config::Config& config,
                                 const config::ModelConfig& entry, engine::ComputeTurns* cpu_turns) {
  // Cloning jobs wait here for the one cloning thread; past this many, 429.
  constexpr int kMaxCloneJobs = 8;
  const engine::tts::TtsConfig& tts = service.model_->config();
  service.cloner_ = std::make_unique<VoiceCloner>(dir, *tts.speaker_encoder, spec, config.compute_threads,
                                                  ReferenceAudioLimits{.max_seconds = config.max_reference_audio_s},
                                                  cpu_turns);
  service.voice_store_ = std::make_unique<VoiceStore>(voices_dir_of(service.id_, config, entry),
                                                      static_cast<size_t>(config.max_voices),
                                                      tts.talker.embedding_length, service.cloner_->num_code_groups());
  service.clone_pool_ = std::make_unique<PrepPool>(1, kMaxCloneJobs);
}

std::unique_ptr<SpeechService> SpeechService::load(const server::LoadedModel& loaded, const config::Config& config,
                                                   const config::ModelConfig& entry,
                                                   prometheus::Registry& registry, engine::ComputeTurns* cpu_turns) {
  namespace tts = engine::tts;
  const engine::ModelInfo& info = loaded.info;
  const std::filesystem::path dir(info.path);
  std::unique_ptr<SpeechService> service(new SpeechService());
  service->id_ = info.id;
  const backends::BackendSpec spec = backends::resolve_backend(info.backend);
  service->talker_backend_ = backends::make_backend(spec, config.compute_threads);
  service->codec_backend_ = backends::make_backend(spec, config.compute_threads);
  service->model_ = tts::TtsModel::load(dir, *service->talker_backend_, loader::parse_load_quantization(info.quantize));
  const std::filesystem::path codec_dir = dir / "speech_tokenizer";
  service->codec_tensors_ = loader::open_tensor_set(codec_dir);
  service->codec_ = std::make_unique<tts::CodecDecoder>(tts::CodecDecoder::load(
      *service->codec_tensors_, tts::read_codec_config(codec_dir / "config.json"), *service->codec_backend_,
      tts::CodecDecoder::kDefaultMaxChunkFrames, tts::parse_codec_precision(entry.codec_precision)));

  std::vector<std::string> speakers;
  for (const auto& [name, id] : service->model_->config().speakers) speakers.push_back(name);
  try {
    service->voices_ = std::make_unique<SpeechVoices>(std::move(speakers), entry.voices);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("model " + info.id + ": " + e.what());
  }

  if (service->model_->config().speaker_encoder) {
    try {
      load_cloning(*service, dir, spec, config, entry, cpu_turns);
    } catch (const std::exception& e) {
      throw std::runtime_error("model " + info.id + ": voice cloning: " + e.what());
    }
  }

  service->metrics_ = std::make_unique<EngineMetrics>(registry, info.id, config.metrics_vllm_names);
  service->speech_metrics_ = std::make_unique<SpeechMetrics>(registry, info.id);
  tts::SpeechEngineConfig engine_settings = speech_engine_config(info.id, config);
  if (service->talker_backend_->device() == backends::DeviceKind::cpu &&
      service->codec_backend_->device() == backends::DeviceKind::cpu)
    engine_settings.compute_turns = cpu_turns;
  service->engine_ = std::make_unique<tts::SpeechEngine>(*service->model_, *service->codec_, std::move(engine_settings),
                                                         service->metrics_.get(), service->speech_metrics_.get());
  service->engine_->start();
  spdlog::info("model {}: speech engine started on {} ({} kernels; codec on its own {} backend), {} KV blocks, "
               "voices: {}",
               info.id, service->talker_backend_->name(), service->talker_backend_->kernel_path(),
               service->codec_backend_->name(), service->engine_->num_kv_blocks(),
               service->voices_->has_speakers() ? std::to_string(service->voices_->names().size())
                                                : std::string("described by the instructions (VoiceDesign)"));
  return service;
}

SpeechService::~SpeechService() { stop(); }

void SpeechService::refresh_metrics() {
  if (metrics_ && engine_) metrics_->refresh(engine_->stats());
}

void SpeechService::stop() {
  if (engine_) engine_->stop();
  if (clone_pool_) clone_pool_->join();
}

}  // namespace sluice::server
