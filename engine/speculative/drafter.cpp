#include "engine/speculative/drafter.h"

#include "engine/speculative/ngram_drafter.h"

namespace sluice::engine {

std::unique_ptr<Drafter> make_drafter(const SpeculativeConfig& config) {
  switch (config.method) {
    case SpeculativeMethod::none: return nullptr;
    case SpeculativeMethod::ngram:
      return std::make_unique<NgramDrafter>(config.prompt_lookup_min, config.prompt_lookup_max);
  }
  return nullptr;
}

}  // namespace sluice::engine
