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

struct StopOptions {
  std::vector<std::string> strings;  // empty ones are ignored
  std::vector<int32_t> eos_ids;      // stop unless ignore_eos
  bool ignore_eos = false;
  std::vector<int32_t> token_ids;    // vLLM stop_token_ids: stop even with ignore_eos
  int32_t min_tokens = 0;            // vLLM: nothing stops before this many tokens
  // vLLM include_stop_str_in_output: the matched stop string, or the text of the
  // stop token, stays in the output instead of being cut.
  bool include_stop_str = false;
};

class StopChecker {
 public:
  explicit StopChecker(StopOptions options);
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
  bool is_stop_token(int32_t token) const;

  std::vector<std::string> stops_;
  std::vector<int32_t> eos_ids_;
  bool ignore_eos_ = false;
  std::vector<int32_t> stop_token_ids_;
  int64_t min_tokens_ = 0;
  bool include_stop_str_ = false;
  int64_t num_tokens_ = 0;  // pushed so far
  bool stopped_ = false;
  std::string held_;  // text not shown yet: a possible start of a stop string
};

}  // namespace sluice::engine
