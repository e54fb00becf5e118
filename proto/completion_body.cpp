#include "proto/completion_body.h"

#include <charconv>
#include <cmath>
#include <utility>
#include <vector>

#include "proto/sse.h"

namespace sluice::proto {
namespace {

constexpr double kMinLogprob = -9999.0;  // stands in for -inf, as in responses.cpp

double finite_logprob(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : kMinLogprob; }

// A JSON string as dump_json writes it (invalid UTF-8 replaced).
void append_string(std::string& out, std::string_view s) {
  out += dump_json(nlohmann::ordered_json(s));
}

// A piece from token_text (valid UTF-8): most need no escape and are copied as they are.
void append_piece(std::string& out, std::string_view piece) {
  for (char c : piece) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      append_string(out, piece);
      return;
    }
  }
  out += '"';
  out += piece;
  out += '"';
}

void append_int(std::string& out, int64_t value) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  out.append(buf, end);
}

// A finite double in nlohmann's format: the shortest digits that read back the
// same, in decimal notation for decimal exponents in (-4, 15] (integral values end
// in ".0"), else d.ddde+XX.
void append_double(std::string& out, double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(end - buf));
  if (s.front() == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  const size_t e = s.find('e');
  std::string digits(1, s[0]);
  if (e > 1) digits.append(s.substr(2, e - 2));
  std::string_view exponent = s.substr(e + 1);
  const bool negative_exponent = exponent.front() == '-';
  if (exponent.front() == '-' || exponent.front() == '+') exponent.remove_prefix(1);
  int exp10 = 0;
  std::from_chars(exponent.data(), exponent.data() + exponent.size(), exp10);
  if (negative_exponent) exp10 = -exp10;
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;  // the decimal point's place after the first digit
  if (k <= n && n <= 15) {
    out += digits;
    out.append(static_cast<size_t>(n - k), '0');
    out += ".0";
  } else if (0 < n && n <= 15) {
    out.append(digits, 0, static_cast<size_t>(n));
    out += '.';
    out.append(digits, static_cast<size_t>(n));
  } else if (-4 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    const int shown = n - 1;
    out += shown < 0 ? "e-" : "e+";
    const int magnitude = shown < 0 ? -shown : shown;
    if (magnitude < 10) out += '0';
    append_int(out, magnitude);
  }
}

void append_separated(std::string& list, const auto& append_item) {
  if (!list.empty()) list += ',';
  append_item(list);
}

// {"token": logprob, ...}: OpenAI's alternatives, the chosen token always among them.
void append_alternatives(std::string& out, const TokenLogprob& entry) {
  std::vector<std::pair<std::string, double>> alternatives;
  auto put = [&](std::string key, double value, bool overwrite) {
    for (auto& [k, v] : alternatives) {
      if (k != key) continue;
      if (overwrite) v = value;
      return;
    }
    alternatives.emplace_back(std::move(key), value);
  };
  for (const TopLogprob& top : entry.top_logprobs) put(token_text(top.token), finite_logprob(top.logprob), true);
  if (entry.logprob) put(token_text(entry.token), finite_logprob(*entry.logprob), false);
  out += '{';
  for (size_t i = 0; i < alternatives.size(); ++i) {
    if (i > 0) out += ',';
    append_piece(out, alternatives[i].first);
    out += ':';
    append_double(out, alternatives[i].second);
  }
  out += '}';
}

void append_list(std::string& out, std::string_view key, const std::string* shared, const std::string& own) {
  out += '"';
  out += key;
  out += "\":[";
  if (shared != nullptr) out += *shared;
  if (shared != nullptr && !shared->empty() && !own.empty()) out += ',';
  out += own;
  out += ']';
}

void append_logprobs(std::string& out, const CompletionChoiceText& choice) {
  const LogprobsText* shared = choice.shared;
  const LogprobsText own =
      render_logprobs(choice.entries, shared != nullptr ? shared->end_offset : choice.text_offset);
  out += '{';
  append_list(out, "tokens", shared ? &shared->tokens : nullptr, own.tokens);
  out += ',';
  append_list(out, "token_logprobs", shared ? &shared->token_logprobs : nullptr, own.token_logprobs);
  out += ',';
  append_list(out, "top_logprobs", shared ? &shared->top_logprobs : nullptr, own.top_logprobs);
  out += ',';
  append_list(out, "text_offset", shared ? &shared->text_offset : nullptr, own.text_offset);
  out += '}';
}

void append_header(std::string& out, const ResponseHeader& header) {
  out += "{\"id\":";
  append_string(out, header.id);
  out += ",\"object\":\"text_completion\",\"created\":";
  append_int(out, header.created);
  out += ",\"model\":";
  append_string(out, header.model);
}

void append_choice(std::string& out, const CompletionChoiceText& choice) {
  out += "{\"index\":";
  append_int(out, choice.index);
  out += ",\"text\":";
  if (choice.echo.empty()) {
    append_string(out, choice.text);
  } else {
    std::string whole(choice.echo);  // invalid UTF-8 is replaced in the whole text, as one string
    whole += choice.text;
    append_string(out, whole);
  }
  out += ",\"logprobs\":";
  if (choice.has_logprobs) {
    append_logprobs(out, choice);
  } else {
    out += "null";
  }
  out += ",\"finish_reason\":";
  if (choice.finish_reason) {
    append_string(out, *choice.finish_reason);
  } else {
    out += "null";
  }
  out += '}';
}

}  // namespace

LogprobsText render_logprobs(std::span<const TokenLogprob> entries, int64_t text_offset) {
  LogprobsText text;
  for (const TokenLogprob& entry : entries) {
    append_separated(text.tokens, [&](std::string& out) { append_piece(out, token_text(entry.token)); });
    append_separated(text.token_logprobs, [&](std::string& out) {
      if (entry.logprob) {
        append_double(out, finite_logprob(*entry.logprob));
      } else {
        out += "null";
      }
    });
    append_separated(text.top_logprobs, [&](std::string& out) {
      if (!entry.logprob && entry.top_logprobs.empty()) {
        out += "null";
      } else {
        append_alternatives(out, entry);
      }
    });
    append_separated(text.text_offset, [&](std::string& out) { append_int(out, text_offset); });
    text_offset += num_chars(entry.token);
    ++text.num_entries;
  }
  text.end_offset = text_offset;
  return text;
}

std::string completion_body(const ResponseHeader& header, std::span<const CompletionChoiceText> choices,
                            const Usage& usage) {
  std::string out;
  append_header(out, header);
  out += ",\"choices\":[";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i > 0) out += ',';
    append_choice(out, choices[i]);
  }
  out += "],\"usage\":";
  out += dump_json(usage_object(usage));
  out += '}';
  return out;
}

std::string completion_chunk_text(const ResponseHeader& header, const CompletionChoiceText& choice,
                                  std::optional<std::string_view> usage) {
  std::string out;
  append_header(out, header);
  out += ",\"choices\":[";
  append_choice(out, choice);
  out += ']';
  if (usage) {
    out += ",\"usage\":";
    out += *usage;
  }
  out += '}';
  return out;
}

}  // namespace sluice::proto
