#include "server/api/openai/completions_format.h"

#include <algorithm>
#include <utility>

#include "proto/completion_body.h"
#include "proto/sse.h"
#include "server/api/generation/generation_job.h"

namespace sluice::server {

CompletionsFormat::CompletionsFormat(std::vector<EchoedPrompt> prompts, int32_t num_returned)
    : num_returned_(num_returned) {
  echoes_.reserve(prompts.size());
  for (EchoedPrompt& prompt : prompts) {
    Echo echo{std::move(prompt.text), {}, false};
    if (prompt.first_piece) echo.prompt_logprobs.push_back({std::move(*prompt.first_piece), std::nullopt, {}});
    echoes_.push_back(std::move(echo));
  }
}

std::string CompletionsFormat::open_stream(GenerationJob& job) {
  std::string out;
  for (size_t p = 0; p < job.parts().size(); ++p) out += echo_chunks(job, p);
  return out;
}

std::string CompletionsFormat::prompt_scored(GenerationJob& job, size_t part, std::vector<proto::TokenLogprob> entries,
                                             bool streaming) {
  std::vector<proto::TokenLogprob>& scored = echoes_.at(part).prompt_logprobs;
  scored.insert(scored.end(), std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
  return streaming ? echo_chunks(job, part) : std::string();  // once the whole prompt is scored
}

// Streamed echo: one chunk per choice of the part with the prompt text. With
// logprobs it waits until the engine has scored the whole prompt, so that the
// prompt's entries ride along; before any of the choices' own chunks either way.
std::string CompletionsFormat::echo_chunks(GenerationJob& job, size_t part) {
  Echo& echo = echoes_.at(part);
  if (echo.is_sent || echo.text.empty()) return {};
  const JobPart& job_part = job.parts()[part];
  const bool scoring = !echo.prompt_logprobs.empty();
  if (scoring && static_cast<int64_t>(echo.prompt_logprobs.size()) < job_part.num_prompt_tokens) return {};
  echo.is_sent = true;
  const proto::LogprobsText prompt_text = proto::render_logprobs(echo.prompt_logprobs, 0);  // once for all choices
  std::string out;
  for (int32_t k = 0; k < job_part.stream->num_choices(); ++k) {
    const int32_t index = job_part.first_index + k;
    const proto::CompletionChoiceText choice{
        .index = index, .text = echo.text, .has_logprobs = job.settings().want_logprobs, .shared = &prompt_text};
    out += "data: " + proto::completion_chunk_text(job.settings().header, choice, job.chunk_usage_text()) + "\n\n";
    job.choices()[static_cast<size_t>(index)].num_chars_sent = proto::num_chars(echo.text);
  }
  return out;
}

std::string CompletionsFormat::delta_event(GenerationJob& job, int32_t index, const std::string& text,
                                           std::vector<proto::TokenLogprob> logprobs) {
  const JobSettings& settings = job.settings();
  const ChoiceTally& tally = job.choices().at(static_cast<size_t>(index));
  proto::CompletionChoice choice{index, text, std::nullopt, tally.num_chars_sent, std::nullopt};
  if (settings.want_logprobs) choice.logprobs = std::move(logprobs);
  return job.chunk_event(proto::completion_chunk(settings.header, choice, settings.include_usage));
}

std::string CompletionsFormat::finish_event(GenerationJob& job, int32_t index) {
  const JobSettings& settings = job.settings();
  const ChoiceTally& tally = job.choices().at(static_cast<size_t>(index));
  proto::CompletionChoice choice{index, "", std::nullopt, tally.num_chars_sent, tally.finish_reason};
  if (settings.want_logprobs) choice.logprobs = std::vector<proto::TokenLogprob>{};
  return job.chunk_event(proto::completion_chunk(settings.header, choice, settings.include_usage));
}

std::string CompletionsFormat::close_stream(GenerationJob& job) {
  std::string out;
  if (job.settings().include_usage)
    out += proto::sse_event(proto::completion_usage_chunk(job.settings().header, job.usage()));
  return out + proto::sse_done();
}

std::string CompletionsFormat::whole_body(GenerationJob& job) {
  // Written as text: each prompt's scored entries are rendered once, not per choice.
  std::vector<proto::LogprobsText> prompt_texts;
  for (const Echo& echo : echoes_) prompt_texts.push_back(proto::render_logprobs(echo.prompt_logprobs, 0));
  const std::vector<ChoiceTally>& tallies = job.choices();
  std::vector<proto::CompletionChoiceText> choices;
  const auto generated = static_cast<size_t>(job.num_choices_per_part());
  const auto returned = static_cast<size_t>(num_returned_);
  for (size_t p = 0; p < job.parts().size(); ++p) {
    std::vector<size_t> ranked(generated);
    for (size_t k = 0; k < generated; ++k) ranked[k] = p * generated + k;
    // best_of: the n of highest cumulative log-probability, best first.
    if (returned < generated) {
      std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
        return tallies[a].cumulative_logprob > tallies[b].cumulative_logprob;
      });
      ranked.resize(returned);
    }
    for (size_t k = 0; k < ranked.size(); ++k) {
      const ChoiceTally& tally = tallies[ranked[k]];
      choices.push_back({.index = static_cast<int32_t>(p * returned + k), .echo = echoes_.at(p).text,
                         .text = tally.text, .has_logprobs = job.settings().want_logprobs, .shared = &prompt_texts[p],
                         .entries = tally.logprobs, .finish_reason = tally.finish_reason});
    }
  }
  return proto::completion_body(job.settings().header, choices, job.usage());
}

}  // namespace sluice::server
