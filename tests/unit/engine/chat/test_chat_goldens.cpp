// Every template x conversation x flag of tests/fixtures/chat/goldens.json, rendered by
// transformers (make_chat_goldens.py), must come out of sluice byte for byte.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "tests/unit/engine/chat/json_to_value.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::chat::unit_engine_chat_test_chat_goldens {
namespace {

using nlohmann::ordered_json;
using testing::to_value;

const std::filesystem::path kChatDir = std::filesystem::path(SLUICE_FIXTURES_DIR) / "chat";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<ChatMessage> to_messages(const ordered_json& messages) {
  std::vector<ChatMessage> out;
  for (const auto& m : messages) {
    ChatMessage message{m.at("role").get<std::string>(), m.at("content").get<std::string>(), {}};
    for (const auto& [key, value] : m.items()) {
      if (key != "role" && key != "content") message.fields.emplace_back(key, to_value(value));
    }
    out.push_back(std::move(message));
  }
  return out;
}

TEST_CASE("chat templates render the transformers goldens byte for byte") {
  const ordered_json goldens = ordered_json::parse(read_file(kChatDir / "goldens.json"));
  const ordered_json conversations = ordered_json::parse(read_file(kChatDir / "conversations.json"));
  std::map<std::string, ordered_json> by_name;
  for (const auto& c : conversations.at("conversations")) by_name[c.at("name").get<std::string>()] = c;

  std::map<std::string, ChatTemplate> templates;
  for (const auto& [name, spec] : goldens.at("templates").items()) {
    INFO("template " << name);
    templates.emplace(name, ChatTemplate::compile(read_file(kChatDir / "templates" / spec.at("file").get<std::string>())));
  }

  size_t num_cases = 0, num_passed = 0;
  for (const auto& c : goldens.at("cases")) {
    const std::string template_name = c.at("template").get<std::string>();
    const ordered_json& conversation = by_name.at(c.at("conversation").get<std::string>());
    const ordered_json& spec = goldens.at("templates").at(template_name);
    const bool add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    INFO("template " << template_name << ", conversation " << c.at("conversation").get<std::string>()
                     << ", add_generation_prompt " << add_generation_prompt << ", extra " << c.at("extra").dump());
    RenderOptions options;
    if (spec.contains("bos_token")) options.bos_token = spec.at("bos_token").get<std::string>();
    if (spec.contains("eos_token")) options.eos_token = spec.at("eos_token").get<std::string>();
    if (conversation.contains("tools")) options.tools = to_value(conversation.at("tools"));
    for (const auto& [key, value] : c.at("extra").items()) options.variables.emplace_back(key, to_value(value));
    const std::vector<ChatMessage> messages = to_messages(conversation.at("messages"));
    ++num_cases;
    if (c.contains("error")) {
      std::string raised;
      try {
        templates.at(template_name).render(messages, add_generation_prompt, options);
      } catch (const TemplateRaisedError& e) {
        raised = e.what();
      }
      CHECK(raised == c.at("error").get<std::string>());
      num_passed += raised == c.at("error").get<std::string>();
    } else {
      std::string rendered;
      try {
        rendered = templates.at(template_name).render(messages, add_generation_prompt, options);
      } catch (const TemplateError& e) {
        FAIL_CHECK("render threw: " << e.what());
        continue;
      }
      CHECK(rendered == c.at("output").get<std::string>());
      num_passed += rendered == c.at("output").get<std::string>();
    }
  }
  MESSAGE(num_passed << " of " << num_cases << " golden renders match");
  CHECK(num_cases >= 200);
}

TEST_CASE("every golden template passes validate()") {
  const ordered_json goldens = ordered_json::parse(read_file(kChatDir / "goldens.json"));
  for (const auto& [name, spec] : goldens.at("templates").items()) {
    INFO("template " << name);
    const ChatTemplate t = ChatTemplate::compile(read_file(kChatDir / "templates" / spec.at("file").get<std::string>()));
    CHECK_NOTHROW(t.validate());
  }
}

}  // namespace
}  // namespace sluice::chat
