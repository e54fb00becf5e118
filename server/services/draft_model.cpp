#include "server/services/draft_model.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "engine/loader/gguf_file.h"
#include "engine/loader/weight_source.h"

namespace sluice::server {
namespace {

// Vocabularies of one family may differ by a few added tokens past the shared ones
// (llama.cpp allows 128); the drafter never proposes an id the target lacks.
constexpr int32_t kMaxVocabDifference = 128;

}  // namespace

std::string tokenizer_mismatch(const tokenizer::Tokenizer& target, const tokenizer::Tokenizer& draft) {
  if (std::abs(target.vocab_size() - draft.vocab_size()) > kMaxVocabDifference)
    return "vocabulary sizes " + std::to_string(target.vocab_size()) + " and " + std::to_string(draft.vocab_size());
  if (target.bos_id() != draft.bos_id() || target.eos_id() != draft.eos_id())
    return "BOS/EOS ids " + std::to_string(target.bos_id()) + "/" + std::to_string(target.eos_id()) + " and " +
           std::to_string(draft.bos_id()) + "/" + std::to_string(draft.eos_id());
  const int32_t shared = std::min(target.vocab_size(), draft.vocab_size());
  for (int32_t id = 0; id < shared; ++id)
    if (target.token_text(id) != draft.token_text(id))
      return "token " + std::to_string(id) + " (\"" + target.token_text(id) + "\" and \"" + draft.token_text(id) +
             "\")";
  return {};
}

std::unique_ptr<engine::Model> load_draft_model(const std::string& path, backends::Backend& backend,
                                                const tokenizer::Tokenizer& target, const std::string& model_id) {
  const std::filesystem::path where(path);
  if (!std::filesystem::exists(where))
    throw std::runtime_error("model " + model_id + ": the draft model " + path + " does not exist");
  const tokenizer::Tokenizer draft_tokenizer = std::filesystem::is_directory(where)
                                                   ? tokenizer::Tokenizer::from_hf_dir(where)
                                                   : tokenizer::Tokenizer::from_gguf(loader::GgufFile::open(path));
  if (const std::string why = tokenizer_mismatch(target, draft_tokenizer); !why.empty())
    throw std::runtime_error("model " + model_id + ": the draft model " + path +
                             " has another tokenizer than the model (" + why + "); a draft model must share it");
  auto model = engine::Model::load(loader::open_weights(where), backend);
  spdlog::info("model {}: draft model {} on {} ({} layers, {} embedding)", model_id, path, backend.name(),
               model->hparams().num_layers, model->hparams().embedding_length);
  return model;
}

}  // namespace sluice::server
