#include "engine/tts/model/tts_model.h"

#include <stdexcept>
#include <utility>

namespace sluice::engine::tts {

std::unique_ptr<TtsModel> TtsModel::load(const std::filesystem::path& dir, backends::Backend& backend,
                                         std::optional<backends::DType> quantize_to) {
  TtsConfig config = read_tts_config(dir);  // first: a bad config fails before any tensor is read
  tokenizer::Tokenizer tokenizer = tokenizer::Tokenizer::from_hf_dir(dir);
  std::shared_ptr<const loader::TensorSet> tensors = loader::open_tensor_set(dir);
  return from_parts(std::move(tensors), std::move(config), std::move(tokenizer), backend, quantize_to);
}

std::unique_ptr<TtsModel> TtsModel::from_parts(std::shared_ptr<const loader::TensorSet> tensors, TtsConfig config,
                                               std::optional<tokenizer::Tokenizer> tokenizer,
                                               backends::Backend& backend,
                                               std::optional<backends::DType> quantize_to) {
  if (!tensors) throw std::invalid_argument("TtsModel: no tensors");
  return std::unique_ptr<TtsModel>(
      new TtsModel(std::move(tensors), std::move(config), std::move(tokenizer), backend, quantize_to));
}

TtsModel::TtsModel(std::shared_ptr<const loader::TensorSet> tensors, TtsConfig config,
                   std::optional<tokenizer::Tokenizer> tokenizer, backends::Backend& backend,
                   std::optional<backends::DType> quantize_to)
    : tensors_(std::move(tensors)),
      config_(std::move(config)),
      tokenizer_(std::move(tokenizer)),
      backend_(backend),
      weights_(load_tts_weights(*tensors_, config_, backend, quantize_to)) {
  if (config_.speaker_encoder) speaker_encoder_ = std::make_unique<SpeakerEncoder>(*tensors_, *config_.speaker_encoder, backend);
}

}  // namespace sluice::engine::tts
