// The CUDA backend's signal ops (the codec decoder's and the speaker encoder's): argument checks as strict
// as the CPU backend's, then one launch each (kernels in k_signal.cu).
#include "backends/check.h"
#include "backends/cuda/cuda_backend_impl.h"
#include "backends/cuda/cuda_error.h"

namespace sluice::backends::cuda {
namespace {

void check_unary(const Tensor& x, const Tensor& out, const char* what) {
  SLUICE_CHECK(x.dtype == DType::F32 && out.dtype == DType::F32 && same_shape(x, out), what);
}

bool is_vector(const Tensor& t, int64_t n) { return t.dtype == DType::F32 && t.ndim == 1 && t.dim(0) == n; }

void check_conv_operands(const Tensor& x, const Tensor& w, const Tensor& out, const char* what) {
  SLUICE_CHECK(x.dtype == DType::F32 && w.dtype == DType::F32 && out.dtype == DType::F32 && x.ndim == 2 &&
                   w.ndim == 2 && out.ndim == 2,
               what);
}

SignalActivation signal_activation(Backend::Activation act) {
  switch (act) {
    case Backend::Activation::silu: return SignalActivation::silu;
    case Backend::Activation::gelu_erf: return SignalActivation::gelu_erf;
    case Backend::Activation::elu: return SignalActivation::elu;
    case Backend::Activation::sigmoid: return SignalActivation::sigmoid;
    case Backend::Activation::tanh: return SignalActivation::tanh;
    case Backend::Activation::sqrt: return SignalActivation::sqrt;
    case Backend::Activation::log: return SignalActivation::log;
  }
  SLUICE_CHECK(false, "activate: unknown activation");
  return SignalActivation::silu;
}

}  // namespace

void CudaBackend::activate(const Tensor& x, Activation act, const Tensor& out) {
  check_unary(x, out, "activate: x, out must be F32 of one shape");
  launch_activate(signal_activation(act), f32(x), stride(x), f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::clamp(const Tensor& x, float lo, float hi, const Tensor& out) {
  check_unary(x, out, "clamp: x, out must be F32 of one shape");
  launch_clamp(f32(x), stride(x), lo, hi, f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::add_bias(const Tensor& x, const Tensor& bias, const Tensor& out) {
  check_unary(x, out, "add_bias: x, out must be F32 of one shape");
  SLUICE_CHECK(is_vector(bias, x.cols()), "add_bias: bias must be F32 [cols]");
  launch_add_bias(f32(x), stride(x), f32(bias), f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::snake(const Tensor& x, const Tensor& alpha, const Tensor& inv_beta, const Tensor& out) {
  check_unary(x, out, "snake: x, out must be F32 of one shape");
  SLUICE_CHECK(is_vector(alpha, x.cols()) && is_vector(inv_beta, x.cols()),
               "snake: alpha, inv_beta must be F32 [channels]");
  launch_snake(f32(x), stride(x), f32(alpha), f32(inv_beta), f32_mut(out), stride(out), rows_of(x), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, int dilation, const Tensor& out) {
  check_conv_operands(x, w, out, "conv1d: x, w, out must be 2-D F32");
  const int64_t cin = x.cols(), cout = w.dim(0);
  SLUICE_CHECK(dilation >= 1 && cin > 0 && w.cols() % cin == 0, "conv1d: w must be [Cout, k*Cin]");
  const int64_t taps = w.cols() / cin;
  SLUICE_CHECK(out.cols() == cout && x.rows() == out.rows() + (taps - 1) * dilation,
               "conv1d: x must be [T + (k-1)*dilation, Cin] and out [T, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv1d: bias must be F32 [Cout]");
  ConvLaunch c;
  c.x = f32(x);
  c.x_stride = stride(x);
  c.step = dilation;
  c.w = f32(w);
  c.w_stride = stride(w);
  c.cin = cin;
  c.taps = static_cast<int>(taps);
  c.bias = bias ? f32(bias) : nullptr;
  c.y = f32_mut(out);
  c.y_stride = stride(out);
  c.period = cout;
  c.rows = out.rows();
  c.columns = cout;
  launch_conv(c, stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::depthwise_conv1d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& out) {
  check_conv_operands(x, w, out, "depthwise_conv1d: x, w, out must be 2-D F32");
  const int64_t channels = x.cols(), taps = w.cols();
  SLUICE_CHECK(w.dim(0) == channels && out.cols() == channels && x.rows() == out.rows() + taps - 1,
               "depthwise_conv1d: x [T + k - 1, C], w [C, k], out [T, C]");
  SLUICE_CHECK(!bias || is_vector(bias, channels), "depthwise_conv1d: bias must be F32 [C]");
  launch_depthwise_conv1d(f32(x), stride(x), f32(w), stride(w), static_cast<int>(taps), bias ? f32(bias) : nullptr,
                          f32_mut(out), stride(out), rows_of(out), stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

void CudaBackend::conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& bias, int stride_rows,
                                   const Tensor& out) {
  check_conv_operands(x, w, out, "conv_transpose1d: x, w, out must be 2-D F32");
  const int64_t cin = x.cols(), cout = out.cols();
  SLUICE_CHECK(stride_rows >= 1 && cin > 0 && w.dim(0) == stride_rows * cout && w.cols() % cin == 0,
               "conv_transpose1d: w must be [stride*Cout, m*Cin]");
  const int64_t taps = w.cols() / cin;
  SLUICE_CHECK(out.rows() % stride_rows == 0 && x.rows() == out.rows() / stride_rows + taps - 1,
               "conv_transpose1d: x must be [T + m - 1, Cin] and out [T*stride, Cout]");
  SLUICE_CHECK(!bias || is_vector(bias, cout), "conv_transpose1d: bias must be F32 [Cout]");
  // Output row t*s + r, channel o is column r*Cout + o of a conv with s*Cout columns.
  ConvLaunch c;
  c.x = f32(x);
  c.x_stride = stride(x);
  c.step = 1;
  c.w = f32(w);
  c.w_stride = stride(w);
  c.cin = cin;
  c.taps = static_cast<int>(taps);
  c.bias = bias ? f32(bias) : nullptr;
  c.y = f32_mut(out);
  c.y_stride = stride_rows * stride(out);
  c.period = cout;
  c.phase_stride = stride(out);
  c.rows = out.rows() / stride_rows;
  c.columns = stride_rows * cout;
  launch_conv(c, stream_);
  SLUICE_CUDA_LAUNCH_CHECK();
}

}  // namespace sluice::backends::cuda
