#pragma once
// Decides when one choice stops on its own (EOS token, stop string) and which of its
// text may be shown yet. Stop strings are matched on the detokenized text, across
// token boundaries: text that could be the beginning of a stop string is held back
// until the next tokens prove it is not; on a match the text is cut right before the
// stop string, which is never shown. Owns the held-back text of one choice; engine
// thread only.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::engine {

class StopChecker {
 public:
  // Empty stop strings are ignored. With ignore_eos the eos ids do not stop.
  StopChecker(std::vector<std::string> stop_strings, std::vector<int32_t> eos_ids, bool ignore_eos);

  struct Result {
    std::string text;          // safe to show now (complete UTF-8 when the input is)
    bool stopped = false;      // EOS or a stop string: finish with "stop"
    std::string matched_stop;  // the stop string that matched ("" for EOS)
  };

  // One sampled token and the text it completed (from the incremental detokenizer).
  Result push(int32_t token, std::string_view text);
  // The choice ends for another reason (length, detokenizer flush): releases the
  // held text after appending `text`; a stop string completed by `text` still cuts.
  Result finish(std::string_view text = {});

  size_t num_held() const { return held_.size(); }
  bool is_stopped() const { return stopped_; }

 private:
  Result scan(bool at_end);

  std::vector<std::string> stops_;
  std::vector<int32_t> eos_ids_;
  bool ignore_eos_ = false;
  bool stopped_ = false;
  std::string held_;  // text not shown yet: a possible start of a stop string
};

}  // namespace sluice::engine
