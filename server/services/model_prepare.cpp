#include "server/services/model_prepare.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "backends/backend_factory.h"
#include "engine/loader/generation_defaults_file.h"
#include "engine/loader/quantize.h"
#include "engine/loader/weight_source.h"

namespace sluice::server {
namespace {

std::optional<std::string> special_text(const tokenizer::Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.vocab_size()) return std::nullopt;
  return tok.token_text(id);
}

std::string read_template_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read the chat template file");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) throw std::runtime_error(path + ": the chat template file is empty");
  return text.str();
}

}  // namespace

PreparedModel prepare_model(const server::LoadedModel& loaded, const std::string& backend_spec,
                            int compute_threads, const std::string& chat_template_file) {
  const engine::ModelInfo& info = loaded.info;
  const std::filesystem::path path(info.path);
  PreparedModel out;
  out.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::filesystem::is_directory(path)
                                                             ? tokenizer::Tokenizer::from_hf_dir(path)
                                                             : tokenizer::Tokenizer::from_gguf(*loaded.file));
  out.backend = backends::make_backend(backends::resolve_backend(backend_spec), compute_threads);
  out.model = engine::Model::load(loader::open_weights(path), *out.backend,
                                  loader::parse_load_quantization(info.quantize));
  spdlog::info("model {}: weights on {} ({} kernels), {:.1f} MiB made at load (repacked)", info.id,
               out.backend->name(), out.backend->kernel_path(),
               static_cast<double>(out.backend->made_weight_bytes()) / (1 << 20));
  out.file_defaults = loaded.file ? loader::generation_defaults_from_gguf(*loaded.file)
                                  : loader::read_generation_defaults(info.path);

  const tokenizer::Tokenizer& tok = *out.tokenizer;
  out.render_options.bos_token = special_text(tok, tok.bos_id());
  out.render_options.eos_token = special_text(tok, tok.eos_id());
  std::string source = tok.chat_template();
  std::string where = info.path;
  if (!chat_template_file.empty()) {
    source = read_template_file(chat_template_file);
    where = chat_template_file;
    spdlog::info("model {}: chat template from {}", info.id, chat_template_file);
  }
  if (!source.empty()) {
    try {
      auto compiled = chat::ChatTemplate::compile(std::move(source));
      compiled.validate(out.render_options);
      out.chat_template = std::move(compiled);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": the chat template cannot be rendered: " + e.what());
    }
  } else {
    spdlog::warn("model {}: no chat template, so /v1/chat/completions refuses it", info.id);
  }
  return out;
}

}  // namespace sluice::server
