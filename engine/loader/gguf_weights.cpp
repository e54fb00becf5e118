// open_gguf_weights: a GgufFile seen through the WeightSource interface.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "engine/loader/gguf_file.h"
#include "engine/loader/load_error.h"
#include "engine/loader/rope_freqs.h"
#include "engine/loader/weight_source.h"
#include "engine/loader/weight_table.h"

namespace sluice::loader {
namespace {

using backends::DType;
using engine::ModelHparams;

// llama.cpp's Gemma 3 defaults, which its converter does not write.
constexpr int32_t kGemma3SlidingPattern = 6;
constexpr float kGemma3LocalRopeBase = 10000.0f;
constexpr int64_t kGemma3_27bLayers = 62;

int64_t to_int64(uint64_t value) {
  return value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1
                                                                           : static_cast<int64_t>(value);
}

// Reads the `<arch>.*` keys of one file.
class GgufHparamReader {
 public:
  GgufHparamReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  // A count; llama.cpp allows some to be per-layer arrays: accepted when uniform.
  std::optional<int64_t> count(std::string_view suffix) const {
    const std::string name = key(suffix);
    const GgufValue* value = file_.find(name);
    if (value == nullptr) return std::nullopt;
    if (!value->is_array()) return to_int64(*file_.get_uint(name));
    const std::optional<std::vector<int64_t>> values = value->to_int_vector();
    if (!values || values->empty())
      throw LoadError(file_.path(), "key '" + name + "': expected a count or a non-empty integer array");
    for (int64_t v : *values)
      if (v != values->front())
        throw LoadError(file_.path(), "key '" + name + "': per-layer values differ, which is not supported");
    return values->front();
  }
  int64_t required_count(std::string_view suffix) const {
    if (auto value = count(suffix)) return *value;
    throw LoadError(file_.path(), "missing required key '" + key(suffix) + "'");
  }
  std::optional<float> real(std::string_view suffix) const {
    if (auto value = file_.get_float(key(suffix))) return static_cast<float>(*value);
    return std::nullopt;
  }
  float required_real(std::string_view suffix) const {
    if (auto value = real(suffix)) return *value;
    throw LoadError(file_.path(), "missing required key '" + key(suffix) + "'");
  }

 private:
  const GgufFile& file_;
  std::string arch_;
};

class GgufWeights final : public WeightSource {
 public:
  explicit GgufWeights(GgufFile file) : file_(std::move(file)) {
    load_tensors();
    read_hparams();
  }

  const std::filesystem::path& path() const override { return file_.path(); }
  const ModelHparams& hparams() const override { return hparams_; }
  std::optional<WeightView> find(std::string_view gguf_name) const override {
    return table_.find(gguf_name);
  }

 private:
  void load_tensors() {
    for (const GgufTensorInfo& info : file_.tensors()) {
      WeightView view;
      view.dtype = info.dtype;
      // GGML lists the innermost dim first; row-major lists it last.
      view.shape.assign(info.shape.rbegin(), info.shape.rend());
      for (int64_t& dim : view.shape) dim = to_int64(static_cast<uint64_t>(dim));
      view.data = file_.tensor_data(info);
      const bool is_float16 = info.dtype == DType::F16 || info.dtype == DType::BF16;
      const bool misaligned_f32 =
          info.dtype == DType::F32 && reinterpret_cast<uintptr_t>(view.data.data()) % alignof(float) != 0;
      if (view.shape.size() == 1 && (is_float16 || misaligned_f32)) {
        std::optional<std::vector<float>> values = detail::to_f32(info.dtype, view.data, info.num_elements);
        if (!values) throw LoadError(path(), "tensor '" + info.name + "': data too short");
        table_.add_f32(info.name, std::move(view.shape), std::move(*values));
      } else {
        table_.add_view(info.name, std::move(view));
      }
    }
  }

  void read_hparams() {
    const std::optional<std::string_view> arch_value = file_.get_string("general.architecture");
    if (!arch_value) throw LoadError(path(), "missing required key 'general.architecture'");
    const std::string arch(*arch_value);
    if (arch != "llama" && arch != "qwen3" && arch != "gemma3")
      throw LoadError(path(), "key 'general.architecture': architecture '" + arch +
                                  "' is not supported (llama, qwen3, gemma3)");
    const GgufHparamReader r(file_, arch);
    ModelHparams& hp = hparams_;
    hp.architecture = arch;
    hp.context_length = r.required_count("context_length");
    hp.embedding_length = r.required_count("embedding_length");
    hp.num_layers = r.required_count("block_count");
    hp.ffn_length = r.required_count("feed_forward_length");
    hp.num_heads = r.required_count("attention.head_count");
    hp.num_kv_heads = r.count("attention.head_count_kv").value_or(hp.num_heads);
    hp.head_dim = r.count("attention.key_length")
                      .value_or(hp.num_heads > 0 ? hp.embedding_length / hp.num_heads : 0);
    if (auto value_length = r.count("attention.value_length"); value_length && *value_length != hp.head_dim)
      throw LoadError(path(), "key '" + r.key("attention.value_length") + "' (" +
                                  std::to_string(*value_length) + ") differs from key_length (" +
                                  std::to_string(hp.head_dim) + "), which is not supported");
    hp.norm_eps = r.required_real("attention.layer_norm_rms_epsilon");
    read_vocab_size(r);
    hp.tied_embeddings = !table_.contains("output.weight");

    backends::RopeParams& rope = hp.rope;
    rope.num_rotated = static_cast<int>(std::min<int64_t>(
        r.count("rope.dimension_count").value_or(hp.head_dim), std::numeric_limits<int>::max()));
    rope.theta = r.real("rope.freq_base").value_or(10000.0f);
    read_rope_scaling(r);
    read_rope_freqs();
    rope.neox = arch != "llama";  // GGUF llama q/k are permuted for GGML's normal RoPE
    hp.rope_local = rope;

    if (auto softcap = r.real("attn_logit_softcapping")) hp.attention_softcap = *softcap;
    if (auto softcap = r.real("final_logit_softcapping")) hp.final_softcap = *softcap;
    if (auto scale = r.real("attention.scale")) hp.attention_scale = *scale;
    if (arch == "qwen3") hp.qk_norm = true;
    if (arch == "gemma3") read_gemma3(r);

    detail::HparamKeys keys;
    keys.vocab_size = "tokenizer.ggml.tokens";
    keys.context_length = r.key("context_length");
    keys.embedding_length = r.key("embedding_length");
    keys.num_layers = r.key("block_count");
    keys.num_heads = r.key("attention.head_count");
    keys.num_kv_heads = r.key("attention.head_count_kv");
    keys.head_dim = r.key("attention.key_length");
    keys.ffn_length = r.key("feed_forward_length");
    keys.norm_eps = r.key("attention.layer_norm_rms_epsilon");
    keys.rope_dims = r.key("rope.dimension_count");
    keys.rope_theta = r.key("rope.freq_base");
    keys.rope_scaling = r.key("rope.scaling.factor");
    keys.rope_local_theta = r.key("rope.freq_base_swa");
    keys.sliding_window = r.key("attention.sliding_window");
    keys.sliding_window_pattern = r.key("attention.sliding_window_pattern");
    keys.attention_scale = r.key("attention.scale");
    keys.softcap = r.key("final_logit_softcapping");
    detail::check_hparams(path(), hp, keys);
  }

  void read_vocab_size(const GgufHparamReader& r) {
    if (auto tokens = file_.get_string_array("tokenizer.ggml.tokens")) {
      hparams_.vocab_size = static_cast<int64_t>(tokens->size());
    } else if (auto count = r.count("vocab_size")) {
      hparams_.vocab_size = *count;
    } else {
      throw LoadError(path(), "missing required key 'tokenizer.ggml.tokens' (or '" + r.key("vocab_size") + "')");
    }
  }

  void read_rope_scaling(const GgufHparamReader& r) {
    const std::optional<std::string_view> type = file_.get_string(r.key("rope.scaling.type"));
    if (!type || *type == "none") return;
    if (*type != "linear")
      throw LoadError(path(), "key '" + r.key("rope.scaling.type") + "': rope scaling '" +
                                  std::string(*type) + "' is not supported (none, linear)");
    const float factor = r.real("rope.scaling.factor").value_or(1.0f);
    if (!std::isfinite(factor) || factor <= 0.0f)
      throw LoadError(path(), "key '" + r.key("rope.scaling.factor") + "' is " + std::to_string(factor) +
                                  ", expected > 0");
    hparams_.rope.freq_scale = 1.0f / factor;
  }

  // llama.cpp writes Llama 3 scaling as per-frequency divisors, not as metadata.
  void read_rope_freqs() {
    std::optional<WeightView> view = table_.find("rope_freqs.weight");
    if (!view) return;
    const auto fail = [&](const std::string& reason) {
      throw LoadError(path(), "tensor 'rope_freqs.weight' " + reason);
    };
    if (view->dtype != DType::F32 || view->shape.size() != 1) fail("must be a 1-D F32 tensor");
    std::optional<std::vector<float>> factors =
        detail::to_f32(DType::F32, view->data, static_cast<uint64_t>(view->shape[0]));
    if (!factors) fail("is too short");
    if (auto error = detail::set_llama3_from_factors(hparams_.rope, *factors)) fail(*error);
  }

  void read_gemma3(const GgufHparamReader& r) {
    ModelHparams& hp = hparams_;
    hp.qk_norm = true;
    hp.post_norms = true;
    hp.gelu = true;
    hp.embedding_scale = std::sqrt(static_cast<float>(hp.embedding_length));
    // llama.cpp: 27B scales by 1 / sqrt(d_model / heads) (its query_pre_attn_scalar).
    if (!r.real("attention.scale") && hp.num_layers == kGemma3_27bLayers && hp.num_heads > 0)
      hp.attention_scale = 1.0f / std::sqrt(static_cast<float>(hp.embedding_length / hp.num_heads));
    hp.rope_local.theta = r.real("rope.freq_base_swa").value_or(kGemma3LocalRopeBase);
    hp.rope_local.freq_scale = 1.0f;
    hp.rope_local.llama3_factor = 0.0f;
    hp.sliding_window = static_cast<int32_t>(std::clamp<int64_t>(
        r.count("attention.sliding_window").value_or(0), -1, std::numeric_limits<int32_t>::max()));
    hp.sliding_window_pattern = read_sliding_pattern(r);
    if (hp.sliding_window_pattern == 0) hp.sliding_window = 0;
    if (hp.sliding_window == 0) hp.sliding_window_pattern = 0;
  }

  // A period, or a per-layer bool array (true: sliding) as newer converters write.
  int32_t read_sliding_pattern(const GgufHparamReader& r) {
    const std::string name = r.key("attention.sliding_window_pattern");
    const GgufValue* value = file_.find(name);
    if (value == nullptr) return kGemma3SlidingPattern;
    if (!value->is_array()) {
      return static_cast<int32_t>(
          std::min<uint64_t>(*file_.get_uint(name), std::numeric_limits<int32_t>::max()));
    }
    if (value->element_type() != GgufType::Bool || value->size() != static_cast<uint64_t>(hparams_.num_layers))
      throw LoadError(path(), "key '" + name + "': expected a count or one bool per layer (" +
                                  std::to_string(hparams_.num_layers) + "), found " + value->type_name());
    std::vector<bool> is_sliding;
    for (std::byte b : value->raw_bytes()) is_sliding.push_back(b != std::byte{0});
    std::optional<int32_t> pattern = detail::sliding_pattern_of(is_sliding);
    if (!pattern)
      throw LoadError(path(), "key '" + name + "': sliding layers are not every layer but each Nth, "
                              "which is not supported");
    return *pattern;
  }

  GgufFile file_;
  detail::WeightTable table_;
  ModelHparams hparams_;
};

}  // namespace

std::unique_ptr<WeightSource> open_gguf_weights(const std::filesystem::path& path) {
  return std::make_unique<GgufWeights>(GgufFile::open(path));
}

}  // namespace sluice::loader
