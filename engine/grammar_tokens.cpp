#include "engine/grammar_tokens.h"

#include <algorithm>
#include <string>
#include <vector>

namespace sluice::engine {

std::shared_ptr<const grammar::TokenTable> make_token_table(const tokenizer::Tokenizer& tokenizer,
                                                            int32_t logits_vocab) {
  const int32_t known = tokenizer.vocab_size();
  const int32_t size = std::max(known, logits_vocab);
  std::vector<std::string> bytes(static_cast<size_t>(size));
  std::vector<bool> special(static_cast<size_t>(size), true);
  for (int32_t id = 0; id < known; ++id) {
    special[static_cast<size_t>(id)] = tokenizer.is_special(id);
    if (!special[static_cast<size_t>(id)]) bytes[static_cast<size_t>(id)] = tokenizer.token_to_piece(id);
  }
  std::vector<int32_t> eos(tokenizer.eos_ids().begin(), tokenizer.eos_ids().end());
  return std::make_shared<const grammar::TokenTable>(std::move(bytes), std::move(special), std::move(eos));
}

}  // namespace sluice::engine
