#pragma once
// A lazy grammar's trigger (GenerationRequest::grammar_trigger): watches one choice's
// output, token piece by token piece, for where the grammar starts. Engine thread only.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "engine/request.h"

namespace sluice::engine {

class TriggerWatch {
 public:
  explicit TriggerWatch(GrammarTrigger trigger);

  // The bytes of one more generated token. Once a trigger is found: the output from
  // the trigger's first byte on (what the grammar must match so far); the watch is
  // then done and returns nothing more.
  std::optional<std::string> push(std::string_view piece);

 private:
  GrammarTrigger trigger_;
  std::string output_;        // everything generated so far
  size_t scanned_ = 0;        // output_[0, scanned_) holds no trigger start
  bool quiet_ = false;        // inside reasoning
  bool seen_text_ = false;    // a non-whitespace byte was generated outside reasoning
  bool done_ = false;
};

}  // namespace sluice::engine
