#include "server/api/generation/chat_format.h"

#include <utility>

#include "proto/sse.h"
#include "server/api/generation/generation_job.h"

namespace sluice::server {

using chat::OutputEvent;

ChatFormat::ChoiceParse& ChatFormat::parse_of(GenerationJob& job, int32_t index) {
  if (parses_.empty()) parses_.resize(job.choices().size());
  std::unique_ptr<ChoiceParse>& parse = parses_.at(static_cast<size_t>(index));
  if (!parse) parse = std::make_unique<ChoiceParse>(options_.parser);
  return *parse;
}

void ChatFormat::finish_parse(ChoiceParse& parse, bool streaming) {
  if (parse.finished) return;
  parse.finished = true;
  parse.parser.finish(parse.pending);
  if (!streaming) parse.pending.clear();
}

std::string ChatFormat::open_stream(GenerationJob& job) {
  const JobSettings& settings = job.settings();
  std::string out;
  for (size_t i = 0; i < job.choices().size(); ++i)
    out += job.chunk_event(proto::chat_role_chunk(settings.header, static_cast<int32_t>(i), settings.include_usage));
  return out;
}

void ChatFormat::text_folded(GenerationJob& job, int32_t index, const std::string& text, int64_t num_tokens) {
  if (!options_.parse) return;
  ChoiceParse& parse = parse_of(job, index);
  // A delta's tokens count as reasoning when it began inside the reasoning span (the
  // token that closes it included): the text is not split per token here.
  if (parse.parser.in_reasoning()) parse.reasoning_tokens += num_tokens;
  parse.parser.push(text, parse.pending);
}

std::string ChatFormat::drain(GenerationJob& job, int32_t index, ChoiceParse& parse,
                              std::vector<proto::TokenLogprob> logprobs) {
  const JobSettings& settings = job.settings();
  const std::vector<proto::TokenLogprob>* first_logprobs = settings.want_logprobs ? &logprobs : nullptr;
  std::string out;
  auto emit = [&](nlohmann::ordered_json delta) {
    out += job.chunk_event(proto::chat_delta_chunk(settings.header, index, std::move(delta), first_logprobs,
                                                   settings.include_usage));
    first_logprobs = nullptr;
  };
  std::vector<OutputEvent>& events = parse.pending;
  for (size_t i = 0; i < events.size();) {
    // One chunk per run of events of one kind (and one call).
    OutputEvent run = std::move(events[i]);
    size_t j = i + 1;
    if (run.kind != OutputEvent::Kind::call_begin) {
      for (; j < events.size() && events[j].kind == run.kind && events[j].call_index == run.call_index; ++j)
        run.text += events[j].text;
    }
    i = j;
    switch (run.kind) {
      case OutputEvent::Kind::content:
        emit({{"content", run.text}});
        break;
      case OutputEvent::Kind::reasoning:
        if (options_.include_reasoning) emit(proto::reasoning_delta(run.text));
        break;
      case OutputEvent::Kind::call_begin:
        parse.call_ids.push_back(proto::new_tool_call_id());
        emit(proto::tool_call_begin_delta(run.call_index, parse.call_ids.back(), run.text));
        break;
      case OutputEvent::Kind::call_arguments:
        emit(proto::tool_call_arguments_delta(run.call_index, run.text));
        break;
    }
  }
  events.clear();
  // Logprobs of tokens whose text is held back still go out, on an empty content delta.
  if (first_logprobs != nullptr && !logprobs.empty()) emit({{"content", ""}});
  return out;
}

std::string ChatFormat::delta_event(GenerationJob& job, int32_t index, const std::string& text,
                                    std::vector<proto::TokenLogprob> logprobs) {
  const JobSettings& settings = job.settings();
  if (!options_.parse) {
    return job.chunk_event(proto::chat_content_chunk(settings.header, index, text,
                                                     settings.want_logprobs ? &logprobs : nullptr,
                                                     settings.include_usage));
  }
  return drain(job, index, parse_of(job, index), std::move(logprobs));
}

std::string ChatFormat::wire_finish_reason(GenerationJob& job, int32_t index) {
  const ChoiceTally& tally = job.choices().at(static_cast<size_t>(index));
  const std::string& reason = *tally.finish_reason;
  if (options_.parse && reason == "stop" && !parse_of(job, index).parser.output().calls.empty()) return "tool_calls";
  return reason;
}

std::string ChatFormat::finish_event(GenerationJob& job, int32_t index) {
  const JobSettings& settings = job.settings();
  std::string out;
  if (options_.parse) {
    ChoiceParse& parse = parse_of(job, index);
    finish_parse(parse, /*streaming=*/true);
    out += drain(job, index, parse, {});
  }
  return out + job.chunk_event(proto::chat_finish_chunk(settings.header, index, wire_finish_reason(job, index),
                                                        settings.include_usage));
}

proto::Usage ChatFormat::usage(const GenerationJob& job) const {
  proto::Usage usage = job.usage();
  if (options_.reasoning) {
    int64_t reasoning = 0;
    for (const auto& parse : parses_)
      if (parse) reasoning += parse->reasoning_tokens;
    usage.reasoning_tokens = static_cast<int32_t>(reasoning);
  }
  return usage;
}

std::string ChatFormat::close_stream(GenerationJob& job) {
  std::string out;
  if (job.settings().include_usage) out += proto::sse_event(proto::chat_usage_chunk(job.settings().header, usage(job)));
  return out + proto::sse_done();
}

std::string ChatFormat::whole_body(GenerationJob& job) {
  std::vector<proto::ChatChoice> choices;
  for (size_t i = 0; i < job.choices().size(); ++i) {
    const auto index = static_cast<int32_t>(i);
    ChoiceTally& tally = job.choices()[i];
    proto::ChatChoice choice;
    choice.index = index;
    choice.content = tally.text;
    choice.finish_reason = tally.finish_reason;
    if (options_.parse) {
      ChoiceParse& parse = parse_of(job, index);
      finish_parse(parse, /*streaming=*/false);
      const chat::ParsedOutput& parsed = parse.parser.output();
      choice.content = parsed.content;
      for (const chat::ParsedCall& call : parsed.calls)
        choice.tool_calls.push_back({proto::new_tool_call_id(), call.name, call.arguments});
      choice.content_null = parsed.content.empty() && !parsed.calls.empty();
      if (options_.reasoning) {
        if (parsed.has_reasoning && options_.include_reasoning) choice.reasoning = parsed.reasoning;
      }
      choice.finish_reason = wire_finish_reason(job, index);
    }
    if (job.settings().want_logprobs) choice.logprobs = std::move(tally.logprobs);
    choices.push_back(std::move(choice));
  }
  return proto::dump_json(proto::chat_completion_object(job.settings().header, choices, usage(job)));
}

}  // namespace sluice::server
