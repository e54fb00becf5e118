#include "engine/speculative/drafter.h"

#include <stdexcept>

#include "engine/speculative/model_drafter.h"
#include "engine/speculative/ngram_drafter.h"

namespace sluice::engine {

std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config, const DraftModelSetup& setup) {
  switch (config.method) {
    case SpeculativeMethod::none: return nullptr;
    case SpeculativeMethod::ngram:
      return std::make_unique<NgramDrafter>(config.prompt_lookup_min, config.prompt_lookup_max);
    case SpeculativeMethod::draft_model:
      if (config.draft_model == nullptr) throw std::invalid_argument("speculative: draft_model needs its model");
      return std::make_unique<ModelDrafter>(*config.draft_model, setup);
  }
  return nullptr;
}

}  // namespace sluice::engine
