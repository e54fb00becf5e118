// chat_template_kwargs reach the chat template as variables of the right types.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "engine/chat/chat_template.h"
#include "proto/template_kwargs.h"

namespace unit_proto_test_template_kwargs {

using sluice::chat::ChatMessage;
using sluice::chat::ChatTemplate;
using sluice::chat::RenderOptions;

TEST_CASE("template kwargs: JSON values become template variables, over the defaults") {
  const ChatTemplate tmpl = ChatTemplate::compile(
      "{% if enable_thinking is false %}no-think {% endif %}{{ n + 1 }} {{ names | join(',') }} {{ opts.k }}"
      "{% for m in messages %}|{{ m.content }}{% endfor %}");
  RenderOptions options;
  options.variables.emplace_back("enable_thinking", sluice::chat::Value(true));
  sluice::proto::add_template_variables(
      nlohmann::json{{"enable_thinking", false}, {"n", 41}, {"names", {"a", "b"}}, {"opts", {{"k", "v"}}}}, options);
  const std::vector<ChatMessage> messages{{"user", "hi", {}}};
  CHECK(tmpl.render(messages, false, options) == "no-think 42 a,b v|hi");
  CHECK(options.variables.size() == 4);  // enable_thinking replaced, not doubled
}
}  // namespace unit_proto_test_template_kwargs
