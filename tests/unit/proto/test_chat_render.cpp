// proto/chat_render: a chat request's messages and tools as the chat template sees
// them, through the request path the server takes (parse_chat_request, then
// template_messages and tools_in_order), must render every tool conversation of
// tests/fixtures/chat/goldens.json exactly as transformers' apply_chat_template(...,
// tools=...) did. The conversations send each call's arguments as JSON text, as
// clients do; the template sees them as an object (vLLM's normalization), which is
// what the goldens rendered.
#include "proto/chat_render.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "proto/chat.h"
#include "proto/template_kwargs.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::proto::unit_proto_test_chat_render {
namespace {

using nlohmann::ordered_json;

const std::filesystem::path kChatDir = std::filesystem::path(SLUICE_FIXTURES_DIR) / "chat";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The conversation as a request body; false when a call's arguments are already text
// in the fixture (the template would see an object from the request path, a string in
// the golden).
bool request_body(const ordered_json& conversation, const ordered_json& extra, std::string& body) {
  ordered_json messages = conversation.at("messages");
  for (ordered_json& message : messages) {
    if (!message.contains("tool_calls")) continue;
    for (ordered_json& call : message["tool_calls"]) {
      ordered_json& arguments = call["function"]["arguments"];
      if (arguments.is_string()) return false;
      arguments = arguments.dump();
      if (!call.contains("id")) return false;
    }
  }
  ordered_json out = {{"model", "m"}, {"messages", messages}, {"tools", conversation.at("tools")}};
  if (!extra.empty()) out["chat_template_kwargs"] = extra;
  body = out.dump();
  return true;
}

}  // namespace

TEST_CASE("chat render: tool conversations through the request path render the transformers goldens") {
  const ordered_json goldens = ordered_json::parse(read_file(kChatDir / "goldens.json"));
  const ordered_json conversations = ordered_json::parse(read_file(kChatDir / "conversations.json"));
  std::map<std::string, ordered_json> by_name;
  for (const auto& c : conversations.at("conversations")) by_name[c.at("name").get<std::string>()] = c;
  std::map<std::string, chat::ChatTemplate> templates;
  for (const auto& [name, spec] : goldens.at("templates").items())
    templates.emplace(name, chat::ChatTemplate::compile(read_file(kChatDir / "templates" / spec.at("file").get<std::string>())));

  size_t num_checked = 0;
  std::map<std::string, size_t> per_template;
  for (const auto& c : goldens.at("cases")) {
    const ordered_json& conversation = by_name.at(c.at("conversation").get<std::string>());
    if (!conversation.contains("tools")) continue;
    std::string body;
    if (!request_body(conversation, c.at("extra"), body)) continue;
    const std::string template_name = c.at("template").get<std::string>();
    INFO("template " << template_name << ", conversation " << c.at("conversation").get<std::string>()
                     << ", add_generation_prompt " << c.at("add_generation_prompt").get<bool>());
    ChatParse parsed = parse_chat_request(body);
    REQUIRE(std::holds_alternative<ChatRequest>(parsed));
    const ChatRequest& request = std::get<ChatRequest>(parsed);
    const OrderedTools tools = tools_in_order(request);
    REQUIRE(tools.for_template.size() == conversation.at("tools").size());
    CHECK(tools.for_template == conversation.at("tools"));  // key order kept

    const ordered_json& spec = goldens.at("templates").at(template_name);
    chat::RenderOptions options;
    if (spec.contains("bos_token")) options.bos_token = spec.at("bos_token").get<std::string>();
    if (spec.contains("eos_token")) options.eos_token = spec.at("eos_token").get<std::string>();
    options.tools = template_value(tools.for_template);
    add_template_variables(request.chat_template_kwargs, options);
    std::string rendered, raised;
    try {
      rendered = templates.at(template_name)
                     .render(template_messages(request.messages), c.at("add_generation_prompt").get<bool>(), options);
    } catch (const chat::TemplateRaisedError& e) {
      raised = e.what();
    }
    if (c.contains("error")) {
      CHECK(raised == c.at("error").get<std::string>());
    } else {
      CHECK(raised.empty());
      CHECK(rendered == c.at("output").get<std::string>());
    }
    ++num_checked;
    ++per_template[template_name];
  }
  MESSAGE(num_checked << " tool renders checked through the request path");
  CHECK(per_template.size() == goldens.at("templates").size());  // every template, tools_call included
  CHECK(num_checked >= 30);
}

}  // namespace sluice::proto
