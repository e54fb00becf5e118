#include "server/services/register_model.h"
#include "server/services/model_service.h"
#include "server/services/model_services.h"

#include <doctest/doctest.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "backends/backend_factory.h"
#include "tests/unit/engine/loader/gguf_builder.h"
#include "tests/unit/prerequisites.h"
#include "tests/unit/fixtures_dir.h"

namespace sluice::server::unit_server_services_test_register_model {
namespace {

using backends::DType;
using loader::LoadError;
using loader::testing::Bytes;
using loader::testing::GgufBuilder;
using loader::testing::TempFile;

// A llama-shaped file with one block; `skip` leaves out keys or tensors by name.
Bytes model_bytes(std::string_view arch = "llama", const std::set<std::string>& skip = {},
                  uint32_t context_length = 2048, std::optional<uint32_t> file_type = {}) {
  GgufBuilder builder;
  const std::string a(arch);
  auto keep = [&](const std::string& name) { return skip.count(name) == 0; };
  if (keep("general.architecture")) builder.string("general.architecture", arch);
  builder.string("general.name", "Test Model");
  if (file_type) builder.u32("general.file_type", *file_type);
  if (keep(a + ".context_length")) builder.u32(a + ".context_length", context_length);
  if (keep(a + ".embedding_length")) builder.u32(a + ".embedding_length", 64);
  if (keep(a + ".block_count")) builder.u32(a + ".block_count", 1);
  if (keep("tokenizer.ggml.model")) builder.string("tokenizer.ggml.model", "gpt2");
  if (keep("token_embd.weight")) builder.tensor("token_embd.weight", {64, 10}, DType::Q8_0);
  if (keep("tensors")) {
    builder.tensor("blk.0.attn_norm.weight", {64}, DType::F32);
    builder.tensor("blk.0.attn_q.weight", {64, 64}, DType::Q4_1);
    builder.tensor("blk.0.ffn_up.weight", {64, 128}, DType::Q4_1);
  }
  return builder.build();
}

config::ModelConfig config_for(const TempFile& file) {
  config::ModelConfig config;
  config.path = file.path().string();
  return config;
}

std::string register_error(const config::ModelConfig& config) {
  try {
    register_model(config);
  } catch (const LoadError& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

struct QuietLogs {
  QuietLogs() : level(spdlog::get_level()) { spdlog::set_level(spdlog::level::warn); }
  ~QuietLogs() { spdlog::set_level(level); }
  spdlog::level::level_enum level;
};

}  // namespace

TEST_CASE("registry: a llama-shaped file registers with the right ModelInfo") {
  QuietLogs quiet;
  const Bytes bytes = model_bytes();
  TempFile file(bytes, "test-model.gguf");
  const auto before = std::chrono::system_clock::now();
  const LoadedModel model = register_model(config_for(file));
  const ModelInfo& info = model.info;
  CHECK(info.id == "test-model");
  CHECK(info.path == file.path().string());
  CHECK(info.architecture == "llama");
  CHECK(info.display_name == "Test Model");
  // "auto": the first GPU where one is present, else the CPU.
  CHECK(info.backend == backends::resolve_backend("auto").name());
  CHECK(info.context_length == 2048);
  CHECK(info.trained_context_length == 2048);
  CHECK(info.file_type == "Q4_1");  // no general.file_type: the dtype of most weights
  CHECK(info.num_parameters == 640 + 64 + 4096 + 8192);
  CHECK(info.file_bytes == bytes.size());
  CHECK(info.owned_by == "sluice");
  const auto created = std::chrono::system_clock::time_point(std::chrono::seconds(info.created));
  CHECK(created >= std::chrono::time_point_cast<std::chrono::seconds>(before));
  REQUIRE(model.file != nullptr);
  CHECK(model.file->find_tensor("token_embd.weight") != nullptr);
}

TEST_CASE("registry: configured name, context length and backend") {
  QuietLogs quiet;
  TempFile file(model_bytes("qwen3"));
  config::ModelConfig config = config_for(file);
  config.name = "served-name";
  config.context_length = 512;
  config.backend = "cpu";
  const ModelInfo info = register_model(config).info;
  CHECK(info.id == "served-name");
  CHECK(info.architecture == "qwen3");
  CHECK(info.context_length == 512);
  CHECK(info.trained_context_length == 2048);

  config.context_length = 4096;
  const std::string error = register_error(config);
  CHECK(contains(error, file.path().string() + ": "));
  CHECK(contains(error, "context_length 4096 exceeds the model's trained context length 2048"));

  config.context_length = -1;
  CHECK(contains(register_error(config), "negative"));
}

TEST_CASE("registry: file_type comes from general.file_type when present") {
  QuietLogs quiet;
  TempFile q4km(model_bytes("gemma3", {}, 2048, 15));
  CHECK(register_model(config_for(q4km)).info.file_type == "Q4_K_M");
  TempFile guessed(model_bytes("llama", {}, 2048, 1024 + 7));
  CHECK(register_model(config_for(guessed)).info.file_type == "Q8_0");
  TempFile unknown(model_bytes("llama", {}, 2048, 999));
  CHECK(register_model(config_for(unknown)).info.file_type == "Q4_1");
}

TEST_CASE("registry: a missing required key or tensor names the file and the key") {
  for (const std::string missing :
       {"general.architecture", "llama.context_length", "llama.embedding_length",
        "llama.block_count", "tokenizer.ggml.model", "token_embd.weight"}) {
    CAPTURE(missing);
    TempFile file(model_bytes("llama", {missing}), "broken.gguf");
    const std::string error = register_error(config_for(file));
    CHECK(contains(error, "broken.gguf: "));
    CHECK(contains(error, "'" + missing + "'"));
  }
  TempFile empty(model_bytes("llama", {"token_embd.weight", "tensors"}));
  CHECK(contains(register_error(config_for(empty)), "no tensors"));
  TempFile zero_context(model_bytes("llama", {}, 0));
  CHECK(contains(register_error(config_for(zero_context)),
                 "key 'llama.context_length' is 0, expected a positive integer"));
}

TEST_CASE("registry: unsupported architecture and backends") {
  TempFile gpt2(model_bytes("gpt2"), "gpt2.gguf");
  CHECK(contains(register_error(config_for(gpt2)),
                 "gpt2.gguf: unsupported architecture 'gpt2' (supported: llama, qwen3, gemma3)"));

  TempFile file(model_bytes());
  config::ModelConfig config = config_for(file);
  // Without a usable GPU a CUDA backend is refused at registration, naming why.
  if (backends::cuda_device_count() == 0) {
    for (const std::string backend : {"cuda", "cuda:1"}) {
      config.backend = backend;
      const std::string error = register_error(config);
      CHECK(contains(error, "backend '" + backend + "'"));
      CHECK(contains(error, backends::built_with_cuda() ? "no CUDA device" : "-DSLUICE_CUDA=ON"));
    }
  }
  for (const std::string backend : {"tpu", "cuda:", "cuda:x", ""}) {
    config.backend = backend;
    CHECK(contains(register_error(config), "invalid backend '" + backend + "'"));
  }
}

// A served model with no service behind it: these tests are about the list.
static void add_bare(ModelServices& services, LoadedModel model) {
  services.add(std::move(model), std::unique_ptr<ModelService>());
}

TEST_CASE("served models: add, list in load order, find, reject duplicate ids") {
  QuietLogs quiet;
  TempFile first(model_bytes(), "first.gguf");
  TempFile second(model_bytes("qwen3"), "second.gguf");
  ModelServices services;
  CHECK(services.size() == 0);
  add_bare(services, register_model(config_for(first)));
  add_bare(services, register_model(config_for(second)));
  CHECK(services.size() == 2);
  const std::vector<ModelInfo> models = services.list();
  REQUIRE(models.size() == 2);
  CHECK(models[0].id == "first");
  CHECK(models[1].id == "second");
  CHECK(services.info("second")->architecture == "qwen3");
  CHECK_FALSE(services.info("third").has_value());
  CHECK(services.find("first") == nullptr);  // no text service behind it
  CHECK_THROWS_WITH_AS(add_bare(services, register_model(config_for(first))),
                       doctest::Contains("already registered"), std::invalid_argument);
  CHECK(services.size() == 2);
}

TEST_CASE("served models: readers run while the loader adds") {
  QuietLogs quiet;
  TempFile file(model_bytes());
  const LoadedModel model = register_model(config_for(file));
  ModelServices services;
  std::atomic<bool> is_done{false};
  std::atomic<int> num_misses{0};
  std::thread reader([&] {
    while (!is_done) {
      for (const ModelInfo& info : services.list()) {
        if (!services.info(info.id)) ++num_misses;
      }
    }
  });
  for (int i = 0; i < 200; ++i) {
    LoadedModel copy = model;
    copy.info.id = std::to_string(i);
    add_bare(services, std::move(copy));
  }
  is_done = true;
  reader.join();
  CHECK(num_misses == 0);
  CHECK(services.size() == 200);
}

TEST_CASE("registry: the committed tiny-llama fixture registers") {
  QuietLogs quiet;
  config::ModelConfig config;
  config.path = std::string(SLUICE_FIXTURES_DIR) + "/tiny-llama.gguf";
  const LoadedModel model = register_model(config);
  CHECK(model.info.id == "tiny-llama");
  CHECK(model.info.architecture == "llama");
  CHECK(model.info.display_name == "tiny-llama");
  CHECK(model.info.file_type == "F32");
  CHECK(model.info.context_length == 256);
  const loader::GgufFile& file = *model.file;
  CHECK(file.get_uint("llama.embedding_length") == 64u);
  CHECK(file.get_uint("llama.block_count") == 2u);
  CHECK(file.get_uint("llama.attention.head_count_kv") == 2u);
  CHECK(file.get_string("tokenizer.ggml.model") == "gpt2");
  const auto tokens = file.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.has_value());
  CHECK(file.get_float_array("tokenizer.ggml.scores")->size() == tokens->size());
  CHECK(file.get_int_array("tokenizer.ggml.token_type")->size() == tokens->size());
  const loader::GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
  REQUIRE(embd != nullptr);
  CHECK(embd->shape == std::vector<uint64_t>{64, tokens->size()});
  CHECK(file.find_tensor("blk.1.ffn_down.weight")->shape == std::vector<uint64_t>{128, 64});
  CHECK(file.find_tensor("output.weight") == nullptr);  // tied embeddings
}

TEST_CASE("registry: a Qwen3-TTS checkpoint folder registers as a speech model") {
  QuietLogs quiet;
  config::ModelConfig config;
  config.path = std::string(SLUICE_FIXTURES_DIR) + "/qwen3_tts/custom_voice_small";
  config.name = "tts";
  const LoadedModel model = register_model(config);
  CHECK(model.is_speech());
  CHECK(model.file == nullptr);
  CHECK(model.info.kind == "speech");
  CHECK(model.info.architecture == "qwen3_tts");
  CHECK(model.info.display_name == "Qwen3-TTS custom_voice 0b6");
  CHECK(model.info.context_length == 32768);  // the talker's positions
  // Every element of the talker's and the codec's safetensors (counted from their headers).
  CHECK(model.info.num_parameters == 204560 + 224042);
  CHECK(model.info.file_bytes > model.info.num_parameters);

  // A folder that is not a checkpoint is still read as GGUF, whose error names it.
  config.path = std::string(SLUICE_FIXTURES_DIR) + "/qwen3_tts";
  CHECK_THROWS_AS(register_model(config), LoadError);
  config::ModelConfig gguf;
  gguf.path = std::string(SLUICE_FIXTURES_DIR) + "/tiny-llama.gguf";
  CHECK_FALSE(register_model(gguf).is_speech());
}

TEST_CASE("registry: the default SmolLM2 model registers when present") {
  const std::filesystem::path path = std::filesystem::path(SLUICE_FIXTURES_DIR) /
                                     "../../models/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!sluice::testing::has_model_file(path, "registry: the default SmolLM2 model")) return;
  QuietLogs quiet;
  config::ModelConfig config;
  config.path = path.string();
  const LoadedModel model = register_model(config);
  CHECK(model.info.id == "SmolLM2-135M-Instruct.Q4_1");
  CHECK(model.info.architecture == "llama");
  CHECK(model.info.file_type == "Q4_1");
  CHECK(model.info.context_length == 8192);
  CHECK(model.info.owned_by == "HuggingFaceTB");
  CHECK(model.file->get_uint("llama.block_count") == 30u);
  CHECK(model.file->get_string_array("tokenizer.ggml.tokens")->size() == 49152);
  CHECK(model.file->tensors().size() == 272);
  CHECK(model.info.num_parameters > 130'000'000);
  CHECK(model.info.num_parameters < 140'000'000);
}

}  // namespace sluice::server
