#pragma once
// A Backend that forwards every call to another one (the CPU backend, in tests).
// Tests derive from it and override one hook to drive a code path that otherwise
// needs a GPU: recorded steps, device sampling, allocation failures, limits.
#include <memory>
#include <string>

#include "backends/backend.h"

namespace sluice::backends::testing {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  Backend& inner() { return *inner_; }

  std::string name() const override { return "forwarding(" + inner_->name() + ")"; }
  DeviceKind device() const override { return inner_->device(); }
  MemoryInfo memory_info() const override { return inner_->memory_info(); }
  std::unique_ptr<Buffer> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  std::unique_ptr<Buffer> wrap_weights(std::span<const std::byte> bytes) override {
    return inner_->wrap_weights(bytes);
  }
  void upload(const Tensor& dst, std::span<const std::byte> src) override { inner_->upload(dst, src); }
  void download(const Tensor& src, std::span<std::byte> dst) override { inner_->download(src, dst); }
  void fill_zero(const Tensor& dst) override { inner_->fill_zero(dst); }
  void copy(const Tensor& src, const Tensor& dst) override { inner_->copy(src, dst); }
  void synchronize() override { inner_->synchronize(); }
  bool supports_matmul(DType dtype) const override { return inner_->supports_matmul(dtype); }
  bool supports_attention(int64_t heads, int64_t kv_heads, int64_t head_dim) const override {
    return inner_->supports_attention(heads, kv_heads, head_dim);
  }

  void embed(const Tensor& table, const Tensor& ids, const Tensor& out) override { inner_->embed(table, ids, out); }
  void matmul(const Tensor& x, const Tensor& w, const Tensor& y) override { inner_->matmul(x, w, y); }
  void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) override {
    inner_->rms_norm(x, weight, eps, out);
  }
  void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, const Tensor& out) override {
    inner_->layer_norm(x, weight, bias, eps, out);
  }
  void rope(const Tensor& x, const Tensor& positions, const RopeParams& params) override {
    inner_->rope(x, positions, params);
  }
  void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out) override { inner_->swiglu(gate, up, out); }
  void geglu(const Tensor& gate, const Tensor& up, const Tensor& out) override { inner_->geglu(gate, up, out); }
  void add(const Tensor& a, const Tensor& b, const Tensor& out) override { inner_->add(a, b, out); }
  void scale(const Tensor& x, float s, const Tensor& out) override { inner_->scale(x, s, out); }
  void mul(const Tensor& a, const Tensor& b, const Tensor& out) override { inner_->mul(a, b, out); }
  void transpose(const Tensor& x, const Tensor& out) override { inner_->transpose(x, out); }
  void softmax(const Tensor& x, const Tensor& out) override { inner_->softmax(x, out); }
  void activate(const Tensor& x, Activation act, const Tensor& out) override { inner_->activate(x, act, out); }
  void clamp(const Tensor& x, float lo, float hi, const Tensor& out) override { inner_->clamp(x, lo, hi, out); }
  void add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) override { inner_->add_bias(x, bias, out); }
  void snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) override {
    inner_->snake(x, alpha, inv_beta, out);
  }
  void conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) override {
    inner_->conv1d(x, w, bias, dilation, out);
  }
  void depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) override {
    inner_->depthwise_conv1d(x, w, bias, out);
  }
  void conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride, const Tensor& out) override {
    inner_->conv_transpose1d(x, w, bias, stride, out);
  }
  void write_kv(const Tensor& k, const Tensor& v, const KvLayer& cache, const Tensor& slots) override {
    inner_->write_kv(k, v, cache, slots);
  }
  void attention(const Tensor& q, const KvLayer& cache, std::span<const SequenceSlice> sequences,
                 const AttentionParams& params, const Tensor& out) override {
    inner_->attention(q, cache, sequences, params, out);
  }
  void add_rms_norm(const Tensor& hidden, const Tensor& branch, const Tensor& weight, float eps,
                    const Tensor& normed) override {
    inner_->add_rms_norm(hidden, branch, weight, eps, normed);
  }
  void gated_mlp(const Tensor& x, const Tensor& w_gate, const Tensor& w_up, bool gelu, const Tensor& scratch,
                 const Tensor& out) override {
    inner_->gated_mlp(x, w_gate, w_up, gelu, scratch, out);
  }
  void rope_write_kv(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& positions,
                     const RopeParams& rope, const KvLayer& cache, const Tensor& slots) override {
    inner_->rope_write_kv(q, k, v, positions, rope, cache, slots);
  }
  void begin_step(std::span<const SequenceSlice> sequences, int64_t num_rows) override {
    inner_->begin_step(sequences, num_rows);
  }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace sluice::backends::testing
