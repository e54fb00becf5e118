#include "server/services/speech_voices.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace sluice::server {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

SpeechVoices::SpeechVoices(std::vector<std::string> speakers, const std::map<std::string, std::string>& overrides)
    : speakers_(std::move(speakers)) {
  std::sort(speakers_.begin(), speakers_.end());
  auto is_speaker = [&](const std::string& name) {
    return std::binary_search(speakers_.begin(), speakers_.end(), name);
  };
  if (speakers_.empty()) {
    if (!overrides.empty())
      throw std::invalid_argument("voices: this checkpoint has no speakers (VoiceDesign: the instructions describe "
                                  "the voice), so it takes no voice mapping");
    for (const OpenAiVoice& voice : kOpenAiVoices) aliases_[std::string(voice.name)] = "";
    return;
  }
  for (const OpenAiVoice& voice : kOpenAiVoices) {
    const std::string speaker(voice.speaker);
    if (is_speaker(speaker)) aliases_[std::string(voice.name)] = speaker;
  }
  for (const auto& [name, speaker] : overrides) {
    if (!is_speaker(speaker)) {
      std::string list;
      for (const std::string& s : speakers_) list += (list.empty() ? "" : ", ") + s;
      throw std::invalid_argument("voices: '" + name + "' maps to '" + speaker +
                                  "', which is not a speaker of this checkpoint (" + list + ")");
    }
    aliases_[name] = speaker;
  }
  // OpenAI's first voice when it maps here, else the first speaker by name.
  const auto alloy = aliases_.find("alloy");
  default_speaker_ = alloy != aliases_.end() ? alloy->second : speakers_.front();
}

std::optional<std::string> SpeechVoices::resolve(std::string_view voice) const {
  if (voice.empty()) return default_speaker_;
  const std::string name = lower(voice);
  if (std::binary_search(speakers_.begin(), speakers_.end(), name)) return name;
  if (const auto it = aliases_.find(name); it != aliases_.end()) return it->second;
  return std::nullopt;
}

std::vector<std::string> SpeechVoices::names() const {
  std::vector<std::string> out = speakers_;
  for (const auto& [alias, speaker] : aliases_) {
    if (!std::binary_search(speakers_.begin(), speakers_.end(), alias)) out.push_back(alias);
  }
  return out;
}

}  // namespace sluice::server
