// The voice table of speech models: speakers by name, OpenAI names mapped, config
// overrides, VoiceDesign checkpoints.
#include "server/services/speech_voices.h"

#include <doctest/doctest.h>

#include <set>
#include <stdexcept>

namespace sluice::server::unit_server_services_test_speech_voices {
namespace {

// The speakers of the published CustomVoice checkpoints.
const std::vector<std::string> kPublished = {"serena", "vivian",   "uncle_fu", "ryan", "aiden",
                                             "ono_anna", "sohee", "eric",     "dylan"};

TEST_CASE("speech voices: every OpenAI voice maps to a published CustomVoice speaker") {
  const SpeechVoices voices(kPublished, {});
  std::set<std::string> openai;
  for (const OpenAiVoice& voice : kOpenAiVoices) {
    CAPTURE(voice.name);
    openai.insert(std::string(voice.name));
    CHECK(voices.resolve(voice.name) == std::string(voice.speaker));
  }
  CHECK(openai == std::set<std::string>{"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage",
                                         "shimmer", "verse"});
  CHECK(voices.default_speaker() == "vivian");  // alloy's
  CHECK(voices.resolve("") == "vivian");
  CHECK(voices.resolve("Ryan") == "ryan");  // a speaker by its own name, any case
  CHECK(voices.resolve("ALLOY") == "vivian");
  CHECK_FALSE(voices.resolve("marvin").has_value());
  CHECK(voices.names().size() == kPublished.size() + 11);
}

TEST_CASE("speech voices: mappings to speakers the checkpoint lacks are left out") {
  // The e2e fixture's speakers.
  const SpeechVoices voices({"serena", "ryan", "eric", "dylan"}, {});
  CHECK(voices.resolve("coral") == "serena");
  CHECK(voices.resolve("ash") == "ryan");
  CHECK(voices.resolve("verse") == "eric");
  CHECK(voices.resolve("fable") == "dylan");
  CHECK_FALSE(voices.resolve("alloy").has_value());  // vivian is not there
  CHECK_FALSE(voices.resolve("shimmer").has_value());
  CHECK(voices.default_speaker() == "dylan");  // no alloy: the first speaker by name
  CHECK(voices.names() == std::vector<std::string>{"dylan", "eric", "ryan", "serena", "ash", "coral", "fable", "verse"});
}

TEST_CASE("speech voices: the model entry's voices replace and add mappings") {
  const SpeechVoices voices({"serena", "ryan"}, {{"alloy", "serena"}, {"narrator", "ryan"}});
  CHECK(voices.resolve("alloy") == "serena");
  CHECK(voices.resolve("Narrator") == "ryan");
  CHECK(voices.default_speaker() == "serena");
  CHECK_THROWS_WITH_AS(SpeechVoices({"serena"}, {{"alloy", "vivian"}}),
                       "voices: 'alloy' maps to 'vivian', which is not a speaker of this checkpoint (serena)",
                       std::invalid_argument);
}

TEST_CASE("speech voices: VoiceDesign takes OpenAI names as no voice and nothing else") {
  const SpeechVoices voices({}, {});
  CHECK_FALSE(voices.has_speakers());
  CHECK(voices.resolve("") == "");
  CHECK(voices.resolve("alloy") == "");
  CHECK_FALSE(voices.resolve("serena").has_value());
  CHECK_THROWS_AS(SpeechVoices({}, {{"alloy", "serena"}}), std::invalid_argument);
}

}  // namespace
}  // namespace sluice::server
