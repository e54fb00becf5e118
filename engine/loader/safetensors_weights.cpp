// open_safetensors_weights: a Hugging Face model folder (config.json + safetensors)
// seen through the WeightSource interface, under GGUF tensor names.
#include <charconv>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "engine/loader/config_reader.h"
#include "engine/loader/json_file.h"
#include "engine/loader/load_error.h"
#include "engine/loader/safetensors_file.h"
#include "engine/loader/safetensors_names.h"
#include "engine/loader/weight_source.h"
#include "engine/loader/weight_table.h"

namespace sluice::loader {
namespace {

using backends::DType;
using engine::ModelHparams;
using detail::ConfigReader;
using nlohmann::json;

constexpr uint64_t kMaxConfigBytes = 4u << 20;

// Applies one rope dict ({"rope_type": ..., "rope_theta": ..., "factor": ...}).
void apply_rope_dict(const ConfigReader& config, std::string_view name, backends::RopeParams& rope) {
  const json* dict = config.object(name);
  if (dict == nullptr) return;
  const ConfigReader r(config.path(), *dict, config.key(name) + ".");
  if (auto theta = r.real("rope_theta")) rope.theta = *theta;
  std::string type = r.string("rope_type").value_or(r.string("type").value_or("default"));
  if (type == "default") return;
  if (type == "linear") {
    const float factor = r.real("factor").value_or(1.0f);
    if (!std::isfinite(factor) || factor <= 0.0f) r.fail("factor", "must be > 0");
    rope.freq_scale = 1.0f / factor;
    return;
  }
  if (type == "llama3") {
    rope.llama3_factor = r.real("factor").value_or(8.0f);
    rope.llama3_low_freq_factor = r.real("low_freq_factor").value_or(1.0f);
    rope.llama3_high_freq_factor = r.real("high_freq_factor").value_or(4.0f);
    rope.llama3_original_context = static_cast<int>(std::clamp<int64_t>(
        r.integer("original_max_position_embeddings").value_or(8192), -1, std::numeric_limits<int>::max()));
    return;
  }
  r.fail("rope_type", "is '" + type + "', which is not supported (default, linear, llama3)");
}

struct ArchDefaults {
  int64_t context_length;
  float rope_theta;
  bool tied;
};

class SafetensorsWeights final : public WeightSource {
 public:
  explicit SafetensorsWeights(const std::filesystem::path& dir)
      : dir_(dir), config_path_(dir / "config.json"), set_(SafetensorsSet::open(dir)) {
    const json config = detail::parse_json_file(config_path_, kMaxConfigBytes);
    if (!config.is_object()) throw LoadError(config_path_, "not a JSON object");
    read_hparams(config);
    load_tensors();
  }

  const std::filesystem::path& path() const override { return dir_; }
  const ModelHparams& hparams() const override { return hparams_; }
  std::optional<WeightView> find(std::string_view gguf_name) const override {
    return table_.find(gguf_name);
  }

 private:
  void read_hparams(const json& config) {
    const ConfigReader top(config_path_, config, "");
    const std::string model_type = top.string("model_type").value_or("");
    const json* text_config = &config;
    std::string prefix;
    if (model_type == "gemma3") {  // Gemma3ForConditionalGeneration: the LM's part
      text_config = top.object("text_config");
      if (text_config == nullptr) top.fail("text_config", "is missing");
      prefix = "text_config.";
    } else if (model_type != "llama" && model_type != "qwen3" && model_type != "gemma3_text") {
      top.fail("model_type", "is '" + model_type + "', which is not supported (llama, qwen3, gemma3_text, gemma3)");
    }
    const ConfigReader r(config_path_, *text_config, prefix);
    ModelHparams& hp = hparams_;
    hp.architecture = model_type == "llama" ? "llama" : model_type == "qwen3" ? "qwen3" : "gemma3";
    is_gemma_ = hp.architecture == "gemma3";
    const ArchDefaults defaults = hp.architecture == "llama"   ? ArchDefaults{2048, 10000.0f, false}
                                  : hp.architecture == "qwen3" ? ArchDefaults{32768, 10000.0f, false}
                                                               : ArchDefaults{131072, 1000000.0f, true};

    hp.vocab_size = r.required_integer("vocab_size");
    hp.embedding_length = r.required_integer("hidden_size");
    hp.num_layers = r.required_integer("num_hidden_layers");
    hp.num_heads = r.required_integer("num_attention_heads");
    hp.ffn_length = r.required_integer("intermediate_size");
    hp.num_kv_heads = r.integer("num_key_value_heads").value_or(is_gemma_ ? 4 : hp.num_heads);
    hp.head_dim = r.integer("head_dim").value_or(
        is_gemma_ ? 256 : hp.num_heads > 0 ? hp.embedding_length / hp.num_heads : 0);
    hp.context_length = r.integer("max_position_embeddings").value_or(defaults.context_length);
    hp.norm_eps = r.real("rms_norm_eps").value_or(1e-6f);
    tied_ = r.boolean("tie_word_embeddings")
                .value_or(top.boolean("tie_word_embeddings").value_or(defaults.tied));
    hp.tied_embeddings = tied_;
    if (r.boolean("attention_bias").value_or(false)) r.fail("attention_bias", "is true, which is not supported");
    if (r.boolean("mlp_bias").value_or(false)) r.fail("mlp_bias", "is true, which is not supported");
    check_activation(r);

    backends::RopeParams& rope = hp.rope;
    rope.neox = true;  // Hugging Face q/k are in the NeoX layout
    const float partial = r.real("partial_rotary_factor").value_or(1.0f);
    rope.num_rotated = static_cast<int>(std::clamp<double>(
        std::round(static_cast<double>(hp.head_dim) * partial), 0.0, std::numeric_limits<int>::max()));
    rope.theta = r.real("rope_theta").value_or(defaults.rope_theta);
    apply_rope_dict(r, "rope_scaling", rope);
    hp.rope_local = rope;
    if (is_gemma_) {
      hp.rope_local = backends::RopeParams{};
      hp.rope_local.neox = true;
      hp.rope_local.num_rotated = rope.num_rotated;
      hp.rope_local.theta = r.real("rope_local_base_freq").value_or(10000.0f);
    }
    // transformers 5: rope_parameters, per layer type for Gemma 3.
    if (const json* params = r.object("rope_parameters")) {
      if (params->contains("full_attention") || params->contains("sliding_attention")) {
        const ConfigReader p(config_path_, *params, r.key("rope_parameters."));
        apply_rope_dict(p, "full_attention", rope);
        apply_rope_dict(p, "sliding_attention", hp.rope_local);
      } else {
        apply_rope_dict(r, "rope_parameters", rope);
        if (!is_gemma_) hp.rope_local = rope;
      }
    }

    hp.attention_softcap = r.real("attn_logit_softcapping").value_or(0.0f);
    hp.final_softcap = r.real("final_logit_softcapping").value_or(0.0f);
    if (hp.architecture == "qwen3") {
      hp.qk_norm = true;
      if (r.boolean("use_sliding_window").value_or(false) && layer_sliding(r).value_or(false))
        r.fail("use_sliding_window", "is true, which is not supported for qwen3");
    }
    if (is_gemma_) read_gemma3(r);

    detail::HparamKeys keys;
    keys.vocab_size = r.key("vocab_size");
    keys.context_length = r.key("max_position_embeddings");
    keys.embedding_length = r.key("hidden_size");
    keys.num_layers = r.key("num_hidden_layers");
    keys.num_heads = r.key("num_attention_heads");
    keys.num_kv_heads = r.key("num_key_value_heads");
    keys.head_dim = r.key("head_dim");
    keys.ffn_length = r.key("intermediate_size");
    keys.norm_eps = r.key("rms_norm_eps");
    keys.rope_dims = r.key("partial_rotary_factor");
    keys.rope_theta = r.key("rope_theta");
    keys.rope_scaling = r.key("rope_scaling");
    keys.rope_local_theta = r.key("rope_local_base_freq");
    keys.sliding_window = r.key("sliding_window");
    keys.sliding_window_pattern = r.key("sliding_window_pattern");
    keys.attention_scale = r.key("query_pre_attn_scalar");
    keys.softcap = r.key("final_logit_softcapping");
    detail::check_hparams(config_path_, hp, keys);
  }

  void check_activation(const ConfigReader& r) const {
    const std::string name = is_gemma_ ? "hidden_activation" : "hidden_act";
    std::optional<std::string> act = r.string(name);
    if (!act && is_gemma_) act = r.string("hidden_act");
    if (!act) return;
    const bool ok = is_gemma_ ? (*act == "gelu_pytorch_tanh" || *act == "gelu_tanh" || *act == "gelu_new")
                              : *act == "silu";
    if (!ok) r.fail(name, "is '" + *act + "', which is not supported for " + hparams_.architecture);
  }

  // From layer_types: whether any layer slides; nullopt without layer_types.
  std::optional<bool> layer_sliding(const ConfigReader& r) const {
    std::optional<std::vector<bool>> flags = layer_flags(r);
    if (!flags) return std::nullopt;
    for (bool sliding : *flags)
      if (sliding) return true;
    return false;
  }

  std::optional<std::vector<bool>> layer_flags(const ConfigReader& r) const {
    const json* types = r.find("layer_types");
    if (types == nullptr) return std::nullopt;
    if (!types->is_array() || types->size() != static_cast<size_t>(hparams_.num_layers))
      r.fail("layer_types", "is not an array of one entry per layer");
    std::vector<bool> flags;
    for (const json& type : *types) {
      if (type == "sliding_attention") flags.push_back(true);
      else if (type == "full_attention") flags.push_back(false);
      else r.fail("layer_types", "holds '" + type.dump() + "' (sliding_attention, full_attention)");
    }
    return flags;
  }

  void read_gemma3(const ConfigReader& r) {
    ModelHparams& hp = hparams_;
    hp.qk_norm = true;
    hp.post_norms = true;
    hp.gelu = true;
    hp.embedding_scale = std::sqrt(static_cast<float>(hp.embedding_length));
    const float scalar = r.real("query_pre_attn_scalar").value_or(256.0f);
    if (!std::isfinite(scalar) || scalar <= 0.0f) r.fail("query_pre_attn_scalar", "must be > 0");
    hp.attention_scale = 1.0f / std::sqrt(scalar);
    hp.sliding_window = static_cast<int32_t>(
        std::clamp<int64_t>(r.integer("sliding_window").value_or(4096), -1, std::numeric_limits<int32_t>::max()));
    if (std::optional<std::vector<bool>> flags = layer_flags(r)) {
      std::optional<int32_t> pattern = detail::sliding_pattern_of(*flags);
      if (!pattern) r.fail("layer_types", "has sliding layers other than all but every Nth, which is not supported");
      hp.sliding_window_pattern = *pattern;
    } else {
      const int64_t pattern =
          r.integer("sliding_window_pattern").value_or(r.integer("_sliding_window_pattern").value_or(6));
      hp.sliding_window_pattern = static_cast<int32_t>(std::clamp<int64_t>(pattern, -1, INT32_MAX));
    }
    if (hp.sliding_window_pattern == 0) hp.sliding_window = 0;
    if (hp.sliding_window == 0) hp.sliding_window_pattern = 0;
  }

  void load_tensors() {
    for (const auto& [hf_name, entry] : set_.tensors()) {
      const std::string name = detail::gguf_tensor_name(hf_name, is_gemma_);
      if (name.empty()) continue;  // vision tower, rotary caches, ...
      if (table_.contains(name))
        throw LoadError(entry.file->path(), "tensor '" + hf_name + "' maps to '" + name +
                                                "', which another tensor already has");
      WeightView view;
      view.dtype = entry.info->dtype;
      view.shape = entry.info->shape;
      view.data = entry.file->tensor_data(*entry.info);
      if (view.shape.size() == 1) {
        std::optional<std::vector<float>> values =
            detail::to_f32(view.dtype, view.data, static_cast<uint64_t>(view.shape[0]));
        if (!values) throw LoadError(entry.file->path(), "tensor '" + hf_name + "': cannot convert to F32");
        // Gemma's RMSNorm multiplies by (1 + w); GGUF stores 1 + w.
        if (is_gemma_ && name.ends_with("norm.weight"))
          for (float& v : *values) v += 1.0f;
        table_.add_f32(name, std::move(view.shape), std::move(*values));
      } else if (reinterpret_cast<uintptr_t>(view.data.data()) % (view.dtype == DType::F32 ? 4 : 2) != 0) {
        table_.add_copy(name, std::move(view));
      } else {
        table_.add_view(name, std::move(view));
      }
    }
    if (tied_) {
      table_.erase("output.weight");  // transformers ties lm_head to the embedding
    } else if (!table_.contains("output.weight")) {
      throw LoadError(config_path_, "key 'tie_word_embeddings' is false but there is no lm_head.weight");
    }
  }

  std::filesystem::path dir_;
  std::filesystem::path config_path_;
  SafetensorsSet set_;
  detail::WeightTable table_;
  ModelHparams hparams_;
  bool is_gemma_ = false;
  bool tied_ = false;
};

}  // namespace

std::unique_ptr<WeightSource> open_safetensors_weights(const std::filesystem::path& dir) {
  return std::make_unique<SafetensorsWeights>(dir);
}

}  // namespace sluice::loader
