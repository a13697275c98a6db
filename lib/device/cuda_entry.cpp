#include "device/cuda_entry.hpp"

#include "core/error.hpp"

namespace kvlab::gpu {

#ifdef KVLAB_HAVE_CUDA

namespace {

class CudaRunner final : public KernelRunner {
 public:
  std::string name() const override { return "cuda"; }
  kernels::KvAppendOutput kv_append(const kernels::KvAppendInput& in) override { return kernels::cuda_kv_append(in); }
  std::vector<float> rope(const kernels::RopeInput& in) override { return kernels::cuda_rope(in); }
  std::vector<float> decode_attention(const kernels::DecodeAttentionInput& in) override {
    return kernels::cuda_decode_attention(in);
  }
  std::vector<float> layer_norm(const kernels::RowsInput& in) override { return kernels::cuda_layer_norm(in); }
  std::vector<float> gelu(const kernels::RowsInput& in) override { return kernels::cuda_gelu(in); }
  std::vector<float> softmax(const kernels::RowsInput& in) override { return kernels::cuda_softmax(in); }
};

}  // namespace

std::unique_ptr<KernelRunner> make_cuda_runner() { return std::make_unique<CudaRunner>(); }
std::unique_ptr<kernels::ModelOps> make_model_ops() { return kernels::make_cuda_model_ops(); }
kernels::DeviceFacts device_facts() { return kernels::device_facts(); }
kernels::KernelTiming bench_decode_attention(const kernels::AttentionBenchConfig& c) {
  return kernels::bench_decode_attention(c);
}
kernels::KernelTiming bench_copy(std::size_t bytes, int warmup, int repeats) {
  return kernels::bench_copy(bytes, warmup, repeats);
}
kernels::KernelTiming bench_sgemm(int m, int n, int k, int warmup, int repeats) {
  return kernels::bench_sgemm(m, n, k, warmup, repeats);
}

#else

namespace {
[[noreturn]] void no_cuda() {
  throw InputError("this kvlab was built without CUDA (configure with -DKVLAB_CUDA=ON where nvcc is installed)");
}
}  // namespace

std::unique_ptr<KernelRunner> make_cuda_runner() { no_cuda(); }
std::unique_ptr<kernels::ModelOps> make_model_ops() { no_cuda(); }
kernels::DeviceFacts device_facts() { no_cuda(); }
kernels::KernelTiming bench_decode_attention(const kernels::AttentionBenchConfig&) { no_cuda(); }
kernels::KernelTiming bench_copy(std::size_t, int, int) { no_cuda(); }
kernels::KernelTiming bench_sgemm(int, int, int, int, int) { no_cuda(); }

#endif

}  // namespace kvlab::gpu
