// make_random_weights: a synthetic model's tensors, random but valid for their dtype.
#include "engine/synthetic/random_weights.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>

#include "backends/dtype.h"
#include "engine/loader/load_error.h"
#include "engine/loader/weight_table.h"

namespace sluice::loader {
namespace {

using backends::DType;
using engine::ModelHparams;

constexpr size_t kAlignment = 64;          // every tensor starts on a cache line
constexpr size_t kChunkBytes = size_t{1} << 20;  // unit of parallel work

// splitmix64 (Steele, Lea, Flood 2014): one multiply-xorshift per full 64-bit word,
// fast enough that filling 16 GB is bound by memory, not by the generator.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
};

// Seeds each chunk from (seed, tensor, chunk): the bytes do not depend on which
// thread fills which chunk.
uint64_t chunk_seed(uint64_t seed, uint64_t tensor, uint64_t chunk) {
  SplitMix64 g{seed};
  g.state ^= g.next() + tensor * 0xD1B54A32D192ED03ull;
  g.state ^= g.next() + chunk * 0x8CB92BA72F3D8DD7ull;
  return g.next();
}

// Bits of a positive float as F16, truncated, raised to the smallest normal
// (2^-14) so scales never become subnormal or zero.
uint16_t f16_bits(float value) {
  value = std::max(value, 6.103515625e-05f);
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const int exponent = static_cast<int>((bits >> 23) & 0xFF) - 127 + 15;
  return static_cast<uint16_t>((std::min(exponent, 30) << 10) | ((bits >> 13) & 0x3FF));
}

// How one matrix dtype is filled. Floats: every element's sign and mantissa are
// random and its exponent fixed, so |x| lies in [2^e, 2^(e+1)), e = floor(log2(1 /
// sqrt(in))): a matmul output stays near unit size, and no element is inf or NaN.
// Blocks: every byte random, then each block's F16 scale fields overwritten with a
// small scale that keeps |x| near 1 / sqrt(in). The fields sit where GGML's block
// layouts put them (the GGUF bytes, as backends/cpu/quant_blocks.h spells them out):
// d first in Q8_0, Q4_0 and Q4_K, Q4_K's dmin right after it, Q6_K's d last.
struct Fill {
  uint64_t mask = ~uint64_t{0};  // random bits kept per 64-bit word
  uint64_t bits = 0;             // fixed bits or-ed in (the exponents)
  size_t block_bytes = 0;        // 0: a float format
  size_t scale_offsets[2] = {};  // F16 scale fields in a block
  uint16_t scales[2] = {};
  int num_scales = 0;
};

// `pattern` of `width` bits repeated across a 64-bit word.
uint64_t repeat(uint64_t pattern, int width) {
  uint64_t word = 0;
  for (int shift = 0; shift < 64; shift += width) word |= pattern << shift;
  return word;
}

Fill fill_for(DType dtype, int64_t in) {
  const float amplitude = 1.0f / std::sqrt(static_cast<float>(in));
  const int e = static_cast<int>(std::floor(std::log2(amplitude)));
  Fill f;
  const auto block = [&](size_t bytes, std::initializer_list<std::pair<size_t, float>> fields) {
    f.block_bytes = bytes;
    for (auto [offset, scale] : fields) {
      f.scale_offsets[f.num_scales] = offset;
      f.scales[f.num_scales++] = f16_bits(scale);
    }
  };
  const size_t block_bytes = backends::dtype_traits(dtype).block_bytes;
  switch (dtype) {
    case DType::F32:
      f.mask = repeat(0x807FFFFFull, 32);
      f.bits = repeat(static_cast<uint64_t>(127 + e) << 23, 32);
      break;
    case DType::F16:
      f.mask = repeat(0x83FFull, 16);
      f.bits = repeat(static_cast<uint64_t>(15 + e) << 10, 16);
      break;
    case DType::BF16:
      f.mask = repeat(0x807Full, 16);
      f.bits = repeat(static_cast<uint64_t>(127 + e) << 7, 16);
      break;
    // Scales divide the amplitude by a typical |quant| (times a typical sub-block
    // scale for the k-quants): Q8_0 |q| ~ 64, Q4_0 |q - 8| ~ 4, Q4_K sc ~ 32 and
    // q ~ 8 (dmin * mn ~ the mean of d * sc * q, so values centre near 0), Q6_K
    // |sc| ~ 64 and |q - 32| ~ 16.
    case DType::Q8_0: block(block_bytes, {{0, amplitude / 64}}); break;
    case DType::Q4_0: block(block_bytes, {{0, amplitude / 4}}); break;
    case DType::Q4_K: block(block_bytes, {{0, amplitude / 256}, {2, amplitude / 32}}); break;
    case DType::Q6_K: block(block_bytes, {{block_bytes - 2, amplitude / 1024}}); break;
    default: throw std::invalid_argument("random weights: unsupported dtype");
  }
  return f;
}

void fill_chunk(std::byte* p, size_t n, const Fill& f, SplitMix64& rng) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t word = (rng.next() & f.mask) | f.bits;
    std::memcpy(p + i, &word, 8);
  }
  if (i < n) {  // whole elements, since chunks start on 8 bytes and tensors end on an element
    const uint64_t word = (rng.next() & f.mask) | f.bits;
    std::memcpy(p + i, &word, n - i);
  }
  for (size_t b = 0; f.block_bytes != 0 && b + f.block_bytes <= n; b += f.block_bytes)
    for (int s = 0; s < f.num_scales; ++s) std::memcpy(p + b + f.scale_offsets[s], &f.scales[s], 2);
}

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

class RandomWeights final : public WeightSource {
 public:
  RandomWeights(const RandomModelSpec& spec, uint64_t seed) : path_("random:" + spec.name), hparams_(spec.hparams) {
    const std::vector<RandomTensor> tensors = random_model_tensors(spec);
    std::vector<size_t> offsets;
    size_t total = 0;
    for (const RandomTensor& t : tensors) {
      offsets.push_back(total);
      total += (t.bytes + kAlignment - 1) / kAlignment * kAlignment;
    }
    arena_.reset(static_cast<std::byte*>(std::aligned_alloc(kAlignment, std::max(total, kAlignment))));
    if (!arena_) throw std::bad_alloc();
    fill(tensors, offsets, seed);
    for (size_t i = 0; i < tensors.size(); ++i) {
      WeightView view{tensors[i].dtype, tensors[i].shape, std::span(arena_.get() + offsets[i], tensors[i].bytes)};
      table_.add_view(tensors[i].name, std::move(view));
    }
  }

  const std::filesystem::path& path() const override { return path_; }
  const ModelHparams& hparams() const override { return hparams_; }
  std::optional<WeightView> find(std::string_view name) const override { return table_.find(name); }

 private:
  // Norms are 1 (written here); matrices are split in chunks of whole blocks that
  // the threads take in turn, each touching its pages first.
  void fill(const std::vector<RandomTensor>& tensors, const std::vector<size_t>& offsets, uint64_t seed) {
    struct Job {
      size_t tensor, chunk, begin, end;
      Fill how;
    };
    std::vector<Job> jobs;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const RandomTensor& t = tensors[i];
      std::byte* base = arena_.get() + offsets[i];
      if (t.shape.size() == 1) {
        const float one = 1.0f;
        for (size_t b = 0; b < t.bytes; b += 4) std::memcpy(base + b, &one, 4);
        continue;
      }
      const Fill how = fill_for(t.dtype, t.shape.back());
      const size_t unit = how.block_bytes != 0 ? how.block_bytes : 8;
      const size_t step = std::max<size_t>(1, kChunkBytes / unit) * unit;
      for (size_t begin = 0, c = 0; begin < t.bytes; begin += step, ++c)
        jobs.push_back({i, c, offsets[i] + begin, offsets[i] + std::min(t.bytes, begin + step), how});
    }
    std::atomic<size_t> next{0};
    const auto work = [&] {
      for (size_t j; (j = next.fetch_add(1)) < jobs.size();) {
        const Job& job = jobs[j];
        SplitMix64 rng{chunk_seed(seed, job.tensor, job.chunk)};
        fill_chunk(arena_.get() + job.begin, job.end - job.begin, job.how, rng);
      }
    };
    const size_t num_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 64);
    std::vector<std::jthread> threads;
    for (size_t t = 1; t < std::min(num_threads, jobs.size()); ++t) threads.emplace_back(work);
    work();
  }

  std::filesystem::path path_;
  ModelHparams hparams_;
  std::unique_ptr<std::byte, FreeDeleter> arena_;
  detail::WeightTable table_;
};

ModelHparams base_hparams(const char* arch) {
  ModelHparams h;
  h.architecture = arch;
  h.rope.neox = h.architecture != "llama";  // as GGUF files: llama q/k are permuted for GGML's layout
  return h;
}

void set_heads(ModelHparams& h, int64_t heads, int64_t kv_heads, int64_t head_dim, float theta) {
  h.num_heads = heads;
  h.num_kv_heads = kv_heads;
  h.head_dim = head_dim;
  h.rope.num_rotated = static_cast<int>(head_dim);
  h.rope.theta = theta;
}

}  // namespace

std::vector<std::string_view> random_model_presets() { return {"llama3-8b", "qwen3-8b", "tiny"}; }

RandomModelSpec random_model_preset(std::string_view name) {
  RandomModelSpec spec;
  spec.name = std::string(name);
  ModelHparams& h = spec.hparams;
  if (name == "llama3-8b") {  // Llama 3.1 8B
    h = base_hparams("llama");
    h.vocab_size = 128256;
    h.context_length = 131072;
    h.embedding_length = 4096;
    h.num_layers = 32;
    h.ffn_length = 14336;
    set_heads(h, 32, 8, 128, 500000.0f);
    h.rope.llama3_factor = 8.0f;  // rope_scaling rope_type "llama3"
    h.rope.llama3_low_freq_factor = 1.0f;
    h.rope.llama3_high_freq_factor = 4.0f;
    h.rope.llama3_original_context = 8192;
  } else if (name == "qwen3-8b") {
    h = base_hparams("qwen3");
    h.vocab_size = 151936;
    h.context_length = 40960;
    h.embedding_length = 4096;
    h.num_layers = 36;
    h.ffn_length = 12288;
    h.norm_eps = 1e-6f;
    h.qk_norm = true;
    set_heads(h, 32, 8, 128, 1000000.0f);
  } else if (name == "tiny") {
    h = base_hparams("llama");
    h.vocab_size = 1000;
    h.context_length = 4096;
    h.embedding_length = 256;
    h.num_layers = 2;
    h.ffn_length = 512;
    set_heads(h, 4, 2, 64, 10000.0f);
  } else {
    std::string known;
    for (std::string_view preset : random_model_presets()) known += (known.empty() ? "" : ", ") + std::string(preset);
    throw std::invalid_argument("unknown model shape '" + std::string(name) + "' (presets: " + known + ")");
  }
  h.rope_local = h.rope;
  return spec;
}

bool random_weights_support(DType dtype) {
  switch (dtype) {
    case DType::F32: case DType::F16: case DType::BF16:
    case DType::Q8_0: case DType::Q4_0: case DType::Q4_K: case DType::Q6_K: return true;
    default: return false;
  }
}

std::vector<RandomTensor> random_model_tensors(const RandomModelSpec& spec) {
  const ModelHparams& h = spec.hparams;
  const std::filesystem::path path = "random:" + spec.name;
  detail::HparamKeys keys{"vocab_size", "context_length", "embedding_length", "num_layers", "num_heads",
                          "num_kv_heads", "head_dim", "ffn_length", "norm_eps", "rope.num_rotated",
                          "rope.theta", "rope.scaling", "rope_local.theta", "sliding_window",
                          "sliding_window_pattern", "attention_scale", "softcap"};
  detail::check_hparams(path, h, keys);
  if (!random_weights_support(spec.matrix_dtype))
    throw LoadError(path, "random weights cannot be " + std::string(backends::dtype_name(spec.matrix_dtype)) +
                              " (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)");

  std::vector<RandomTensor> out;
  const auto matrix = [&](std::string name, int64_t rows, int64_t cols) {
    const auto row_bytes = backends::dtype_bytes(spec.matrix_dtype, static_cast<uint64_t>(cols));
    if (!row_bytes)
      throw LoadError(path, "tensor '" + name + "': rows of " + std::to_string(cols) + " are not whole " +
                                std::string(backends::dtype_name(spec.matrix_dtype)) + " blocks");
    out.push_back({std::move(name), spec.matrix_dtype, {rows, cols}, *row_bytes * static_cast<uint64_t>(rows)});
  };
  const auto vector = [&](std::string name, int64_t n) {
    out.push_back({std::move(name), DType::F32, {n}, static_cast<uint64_t>(n) * 4});
  };
  const int64_t d = h.embedding_length, f = h.ffn_length;
  const int64_t q = h.num_heads * h.head_dim, kv = h.num_kv_heads * h.head_dim;
  matrix("token_embd.weight", h.vocab_size, d);
  for (int64_t i = 0; i < h.num_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    vector(p + "attn_norm.weight", d);
    matrix(p + "attn_q.weight", q, d);
    matrix(p + "attn_k.weight", kv, d);
    matrix(p + "attn_v.weight", kv, d);
    matrix(p + "attn_output.weight", d, q);
    if (h.qk_norm) {
      vector(p + "attn_q_norm.weight", h.head_dim);
      vector(p + "attn_k_norm.weight", h.head_dim);
    }
    if (h.post_norms) vector(p + "post_attention_norm.weight", d);
    vector(p + "ffn_norm.weight", d);
    matrix(p + "ffn_gate.weight", f, d);
    matrix(p + "ffn_up.weight", f, d);
    matrix(p + "ffn_down.weight", d, f);
    if (h.post_norms) vector(p + "post_ffw_norm.weight", d);
  }
  vector("output_norm.weight", d);
  if (!h.tied_embeddings) matrix("output.weight", h.vocab_size, d);
  return out;
}

void fill_random_matrix(DType dtype, int64_t fan_in, uint64_t seed, std::span<std::byte> out) {
  SplitMix64 rng{seed};
  fill_chunk(out.data(), out.size(), fill_for(dtype, std::max<int64_t>(1, fan_in)), rng);
}

std::unique_ptr<WeightSource> make_random_weights(const RandomModelSpec& spec, uint64_t seed) {
  return std::make_unique<RandomWeights>(spec, seed);
}

}  // namespace sluice::loader
