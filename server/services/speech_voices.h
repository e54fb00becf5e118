#pragma once
// The voices a speech model answers to: its checkpoint speakers by name, and OpenAI's
// voice names mapped onto them so clients written for OpenAI work unchanged. The
// built-in table (kOpenAiVoices) picks, per OpenAI voice, a CustomVoice speaker of
// the published checkpoints; a model entry's `voices` config replaces or adds
// mappings. Entries whose speaker the checkpoint lacks are left out.
//
// A VoiceDesign checkpoint has no speakers: the request's instructions describe the
// voice, so an OpenAI voice name (the official client always sends one) is accepted
// and has no effect; any other name is refused.
//
// Immutable after construction; any thread may read it.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::server {

struct OpenAiVoice {
  std::string_view name;     // OpenAI's voice
  std::string_view speaker;  // the Qwen3-TTS CustomVoice speaker it becomes
};

// OpenAI voice -> CustomVoice speaker (Qwen3-TTS 0.6B/1.7B CustomVoice speakers:
// serena, vivian, uncle_fu, ryan, aiden, ono_anna, sohee, eric, dylan). Female
// OpenAI voices get female speakers, male ones male speakers.
inline constexpr OpenAiVoice kOpenAiVoices[] = {
    {"alloy", "vivian"}, {"ash", "ryan"},      {"ballad", "uncle_fu"}, {"coral", "serena"},
    {"echo", "aiden"},   {"fable", "dylan"},   {"onyx", "uncle_fu"},   {"nova", "vivian"},
    {"sage", "sohee"},   {"shimmer", "ono_anna"}, {"verse", "eric"},
};

class SpeechVoices {
 public:
  // `speakers`: the checkpoint's (lower-case; empty for VoiceDesign). `overrides`:
  // the model entry's voices (lower-case names). Throws std::invalid_argument when an
  // override names a speaker the checkpoint lacks, or maps a VoiceDesign voice.
  SpeechVoices(std::vector<std::string> speakers, const std::map<std::string, std::string>& overrides);

  // The speaker a request's voice selects: a speaker by its own name or an alias
  // (case-insensitive); empty voice: the default speaker. For VoiceDesign "" (no
  // speaker). nullopt when the model has no such voice.
  std::optional<std::string> resolve(std::string_view voice) const;

  bool has_speakers() const { return !speakers_.empty(); }
  const std::vector<std::string>& speakers() const { return speakers_; }  // sorted
  // Alias -> speaker (VoiceDesign: the OpenAI names -> "").
  const std::map<std::string, std::string>& aliases() const { return aliases_; }
  const std::string& default_speaker() const { return default_speaker_; }
  // Every accepted name, speakers first, for error messages and /v1/audio/voices.
  std::vector<std::string> names() const;

 private:
  std::vector<std::string> speakers_;
  std::map<std::string, std::string> aliases_;
  std::string default_speaker_;
};

}  // namespace sluice::server
