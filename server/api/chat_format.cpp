#include "server/api/chat_format.h"

#include <utility>

#include "proto/sse.h"
#include "server/api/generation_job.h"

namespace sluice::server {

std::string ChatFormat::open_stream(GenerationJob& job) {
  const JobSettings& settings = job.settings();
  std::string out;
  for (size_t i = 0; i < job.choices().size(); ++i)
    out += job.chunk_event(proto::chat_role_chunk(settings.header, static_cast<int32_t>(i), settings.include_usage));
  return out;
}

std::string ChatFormat::delta_event(GenerationJob& job, int32_t index, const std::string& text,
                                    std::vector<proto::TokenLogprob> logprobs) {
  const JobSettings& settings = job.settings();
  return job.chunk_event(proto::chat_content_chunk(settings.header, index, text,
                                                   settings.want_logprobs ? &logprobs : nullptr,
                                                   settings.include_usage));
}

std::string ChatFormat::finish_event(GenerationJob& job, int32_t index) {
  const JobSettings& settings = job.settings();
  const ChoiceTally& tally = job.choices().at(static_cast<size_t>(index));
  return job.chunk_event(
      proto::chat_finish_chunk(settings.header, index, *tally.finish_reason, settings.include_usage));
}

std::string ChatFormat::close_stream(GenerationJob& job) {
  std::string out;
  if (job.settings().include_usage) out += proto::sse_event(proto::chat_usage_chunk(job.settings().header, job.usage()));
  return out + proto::sse_done();
}

std::string ChatFormat::whole_body(GenerationJob& job) {
  std::vector<proto::ChatChoice> choices;
  for (size_t i = 0; i < job.choices().size(); ++i) {
    ChoiceTally& tally = job.choices()[i];
    proto::ChatChoice choice{static_cast<int32_t>(i), tally.text, std::nullopt, tally.finish_reason};
    if (job.settings().want_logprobs) choice.logprobs = std::move(tally.logprobs);
    choices.push_back(std::move(choice));
  }
  return proto::dump_json(proto::chat_completion_object(job.settings().header, choices, job.usage()));
}

}  // namespace sluice::server
