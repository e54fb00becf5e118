#pragma once
// What loading a model checks, in one place for `serve` and `inspect`: the
// tokenizer built from the file (vocabulary, merges, special tokens), the weights
// bound on a backend (every tensor the architecture needs, with its shape, dtype
// and size), the generation defaults the file declares, and the chat template
// compiled and rendered once. `serve` starts an engine on the result; `inspect`
// reports it and stops.
#include <memory>
#include <optional>
#include <string>

#include "backends/backend.h"
#include "engine/chat/chat_template.h"
#include "engine/generation_defaults.h"
#include "server/services/register_model.h"
#include "engine/models/model.h"
#include "engine/tokenizer/tokenizer.h"

namespace sluice::server {

struct PreparedModel {
  std::unique_ptr<backends::Backend> backend;
  std::unique_ptr<engine::Model> model;  // bound on `backend`
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::optional<chat::ChatTemplate> chat_template;  // none: the file has no template
  chat::RenderOptions render_options;
  engine::GenerationDefaults file_defaults;  // what the model file declares
};

// `backend_spec` as resolve_backend() takes it ("cpu", "cuda:0", ...). Throws
// std::exception naming the file and what is wrong.
// `chat_template_file`: a Jinja file that replaces the model's own template ("": none).
PreparedModel prepare_model(const server::LoadedModel& loaded, const std::string& backend_spec,
                            int compute_threads, const std::string& chat_template_file = {});

}  // namespace sluice::server
