// Shared CUDA plumbing for the cuda backend. Included only by
// engine/device/cuda/*.{cpp,cu}: with cudnn_v9 and cublas_v2 it is the one place
// that pulls in the CUDA headers (nothing above the backend may see them).
//
// defines:
//   TP_CALL(fn, args...)        call a CUDA/cuDNN/cuBLAS function, throw CudaError naming it
//   check_launch(kernel)        after a <<<...>>> launch: throw if it failed
//   bind_device(ordinal)        make the calling thread's current device ours
//   Unique<Ptr, Destroy>        RAII for every handle kind (descriptors, handles, streams, events)
//   DeviceBuffer                RAII cudaMalloc, for the few buffers outside the arena
//   tensor_desc / filter_desc   cuDNN descriptors for our NCHW f32 tensors
//   make_cudnn_handle(stream)   a cuDNN handle, with the arena's out-of-memory message
//   Shared, Context             what the kernel tables share, and one table's handles
//   grid_for(count)             launch geometry for grid-stride loops
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/core/bytes_text.h"
#include "engine/device/cuda/cuda_error.h"
#include "engine/device/kernel_cache.h"
#include "engine/device/kernel_choice.h"
#include "engine/device/kernels.h"

namespace tidepool::cuda {

// --- errors ------------------------------------------------------------------

// Throws CudaError("<call>: <name>: <description>") unless the status is success.
void check(cudaError_t status, const char* call);
void check(cudnnStatus_t status, const char* call);
void check(cublasStatus_t status, const char* call);

// The name comes from the macro, so a message always names the function
// that was really called, never a stale string next to it.
#define TP_CALL(fn, ...) ::tidepool::cuda::check(fn(__VA_ARGS__), #fn)

// Kernel launches report configuration errors (bad grid, no kernel image
// for this GPU) through cudaGetLastError; faults inside a kernel surface
// later, at the next synchronising call, as that call's CudaError.
void check_launch(const char* kernel);

// CUDA's current device is per host thread, and events, handles, pinned
// allocations and launches belong to whichever device is current when they
// are made. So every public entry point of the device and of its kernel
// tables calls this first: a thread left on another GPU (by another device
// object, or by other code) would otherwise make our events on that GPU and
// launch there. It does not restore the previous device on return: since
// CUDA 12, cudaSetDevice creates the target's primary context, so putting
// back a thread's untouched default (device 0) would allocate a context on
// a GPU this process may not otherwise use.
void bind_device(int ordinal);

// cuDNN's legacy API takes int dimensions; larger tensors are refused with
// the figures rather than silently truncated.
int to_int(std::int64_t v, const char* what);

// --- RAII ----------------------------------------------------------------------

template <auto Destroy>
struct Destroyer {
  template <class P>
  void operator()(P p) const noexcept {
    // Destruction must not throw; a failure here means the context is
    // already gone (process exit), when there is nothing left to free.
    (void)Destroy(p);
  }
};

// A unique owner of an opaque CUDA handle, e.g.
// Unique<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>.
template <class Ptr, auto Destroy>
using Unique = std::unique_ptr<std::remove_pointer_t<Ptr>, Destroyer<Destroy>>;

using StreamHandle = Unique<cudaStream_t, cudaStreamDestroy>;
using EventHandle = Unique<cudaEvent_t, cudaEventDestroy>;
using CudnnHandle = Unique<cudnnHandle_t, cudnnDestroy>;
using CublasHandle = Unique<cublasHandle_t, cublasDestroy>;
using TensorDesc = Unique<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Unique<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Unique<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using ActivationDesc = Unique<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor>;

// Device memory outside the arena. The device owns exactly two kinds: each
// kernel table's small scratch (cuBLAS workspace and per-channel values,
// made with the table) and the temporary buffers a `p`-scheme convolution
// search measures with before the arena exists. Everything a training step
// touches comes from the arena.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Throws DeviceError with the free/total figures when the device is full.
  DeviceBuffer(std::size_t bytes, const char* what);
  DeviceBuffer(DeviceBuffer&&) noexcept = default;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept = default;

  void* get() const { return ptr_.get(); }
  std::byte* bytes() const { return static_cast<std::byte*>(ptr_.get()); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(void* p) const noexcept { (void)cudaFree(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  std::size_t size_ = 0;
};

// "out of device memory reserving 2.0 GiB for the arena: 1.2 GiB free of
// 79.1 GiB on this GPU". Also clears the (non-sticky) allocation error so
// that it does not resurface from an unrelated later call.
[[noreturn]] void throw_out_of_memory(std::size_t requested, const char* what);
// The same for a library call that ran out without saying how much it
// wanted: "out of device memory creating the cuDNN handle (cudnnCreate:
// CUDNN_STATUS_...): 3.0 MiB free of 79.1 GiB on this GPU; try ...".
[[noreturn]] void throw_out_of_memory(const char* what, const char* call, const char* status);
// What a cuDNN or cuBLAS handle needs free to be created, about: its
// streams, its kernels' modules and a few MiB of state.
inline constexpr std::size_t kLibraryStartBytes = std::size_t{64} << 20;
// A handle that could not be created: out of device memory (above) where
// less than kLibraryStartBytes is free, else the libraries do not fit the
// runtime or driver, which the message says with every version it read.
[[noreturn]] void throw_library_start_failure(const char* what, const char* call, const char* status);
// Launches an empty kernel of ours on the current device: the error of a
// build without code this GPU can run (cudaErrorNoKernelImageForDevice),
// or cudaSuccess.
cudaError_t probe_kernel_image();

// --- descriptors -----------------------------------------------------------------

// f32 unless `type` says bf16 or f16 (CUDNN_DATA_BFLOAT16, CUDNN_DATA_HALF).
TensorDesc tensor_desc(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                       DType type = DType::f32);
FilterDesc filter_desc(std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s,
                       DType type = DType::f32);

// --- kernel tables -----------------------------------------------------------------

// First element of every cache key (engine/device/kernel_cache.h), so different
// ops never share an entry.
enum class Op : std::int64_t { conv = 1, batchnorm };

struct CacheEntry {
  virtual ~CacheEntry() = default;
  // The line Device::kernel_choices() gives for a choice made by timing
  // ("<shape> -> <algo> <math>", conv2d.cpp); empty for everything else.
  virtual std::string recorded() const { return {}; }
};

// Decisions that hold for the whole process: per GPU, the convolution plans
// (algorithm, workspace, descriptors) and batchnorm's descriptors. Shared by
// every device object on that GPU, so one process always runs the same
// algorithm for the same shape, even across devices (the `p` scheme's
// timings are noisy, and a second measurement could pick another
// algorithm, and so other numbers). Never destroyed: entries are cheap host
// objects, and freeing them at exit would race the CUDA runtime's own
// teardown.
class PlanCache {
 public:
  // Returns the entry for `key`, building it with `make` on first use.
  // Entries are never evicted; the reference stays valid until exit.
  template <class T, class Make>
  T& entry(const CacheKey& key, Make&& make) {
    return static_cast<T&>(find_or_build(
        key, [&]() -> std::unique_ptr<CacheEntry> { return std::forward<Make>(make)(); }));
  }

  // The recorded() lines of every entry, sorted (Device::kernel_choices).
  std::vector<std::string> recorded() const;
  // Choices made elsewhere (Device::adopt_kernel_choices): `line` is a
  // recorded() line; an entry built later for its shape takes its choice.
  // Entries built already keep theirs. Returns the part after " -> " for a
  // shape's text, or "" (adopted_choice).
  void adopt(const std::vector<std::string>& lines);
  std::string adopted_choice(const std::string& shape) const;

 private:
  CacheEntry& find_or_build(const CacheKey& key,
                            const std::function<std::unique_ptr<CacheEntry>()>& make);
  mutable std::mutex mutex_;
  std::unordered_map<CacheKey, std::unique_ptr<CacheEntry>, CacheKeyHash> cache_;
  // Adopted choices; read while an entry is built (under mutex_), so
  // adopted_choice does not lock: see find_or_build.
  KernelChoiceRecord adopted_;
};

// The cache of GPU `ordinal` (cuda_kernels.cpp).
PlanCache& plan_cache(int ordinal);

// A cuDNN handle made on the current device that enqueues on `stream`.
// Out of memory while making it gets the arena's message
// (throw_out_of_memory).
CudnnHandle make_cudnn_handle(cudaStream_t stream);

// What the three kernel tables of one device share.
struct Shared {
  // Makes the planning handle on the current device (see below).
  Shared(int gpu, cudaStream_t compute);

  const int ordinal;  // the GPU, for bind_device()
  PlanCache& plans;
  // The cuDNN handle that decides convolution plans (heuristic ranking,
  // workspace sizes, the `p` scheme's timing), apart from the tables'
  // own: workspace queries may come from any thread while the executor
  // enqueues through the compute table's handle, and a cuDNN handle must
  // not be used by two threads at once. Only plan builds use it, and the
  // plan cache builds one entry at a time under its lock. Its stream is
  // the compute stream, where timing runs while the device starts up.
  CudnnHandle planning;
  // Measuring algorithms (cudnnFind*Ex) needs device buffers of its own.
  // That is allowed while the device is starting up; once its arena is
  // reserved every later byte must come from it, so shapes first seen
  // after that fall back to cuDNN's heuristic ranking (see conv2d.cpp).
  std::atomic<bool> may_measure{true};
};

// One kernel table's handles, bound for good to one stream: cuDNN and
// cuBLAS enqueue there and nowhere else, so a table never needs to switch
// streams (switching would also reset cuBLAS's workspace, see below).
struct Context {
  // Creates the handles on the current device and binds them to `stream`.
  Context(std::shared_ptr<Shared> shared, cudaStream_t stream);

  std::shared_ptr<Shared> shared;
  cudaStream_t stream;
  CudnnHandle cudnn;
  CublasHandle cublas;
  // [cuBLAS workspace][per-channel floats]. cuBLAS gets a fixed workspace
  // of its own: with the default pool its algorithm choice can depend on
  // what the pool holds, and bit-identical runs need the same choice every
  // time. The per-channel floats hold batchnorm's inverse deviations for
  // backward (see batchnorm.cu).
  DeviceBuffer scratch;
  std::size_t cublas_workspace_bytes = 0;
  float* channel_scratch = nullptr;
  int compute_major = 0;  // the GPU's compute capability

  // cublasSetWorkspace's documented recommendation: 32 MiB on Hopper
  // (compute capability 9) and later, whose GEMM kernels want more; 4 MiB
  // before.
  static std::size_t cublas_workspace_for(int compute_major) {
    return (compute_major >= 9 ? std::size_t{32} : std::size_t{4}) << 20;
  }
  static constexpr std::int64_t kChannelScratchFloats = 16384;
};

// --- launches ----------------------------------------------------------------------

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over `count` elements: enough to fill the
// GPU several times over, capped so that the grid size stays valid and
// the per-thread loop does the rest.
inline unsigned grid_for(std::int64_t count) {
  const std::int64_t blocks = (count + kThreads - 1) / kThreads;
  constexpr std::int64_t kMaxBlocks = 65535;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

// out[ch] = sum over (i, j) of x[(i * channels + ch) * inner + j], one
// block per channel with a fixed reduction tree: no atomics, so the sum is
// bit-identical run after run. Serves conv and linear bias gradients
// (reductions.cu).
// x is of `type` (f32, or a 16-bit activation gradient), summed in f32.
void launch_channel_sum(cudaStream_t stream, const void* x, DType type, float* out, std::int64_t outer,
                        std::int64_t channels, std::int64_t inner);
// y[(i * channels + ch) * inner + j] += b[ch], y of 16-bit `type`: a 16-bit
// convolution's bias (an f32 output takes cuDNN's cudnnAddTensor). cuDNN
// has rounded y to 16 bits already, so the biased value is rounded twice
// (once more than on the cpu device's f32 copies); only the zoo's
// convolutions without batch norm (alexnet, vgg) have a bias.
void launch_add_channel_bias(cudaStream_t stream, void* y, DType type, const float* b, std::int64_t outer,
                             std::int64_t channels, std::int64_t inner);

// --- 16-bit activations of our own kernels (CudaKernels::takes_16bit) -------------
// ReLU on `count` values of 16-bit `type` (relu_16bit.cu): max(x, 0) with NaN
// kept, and dy where y > 0; exact, as widening and rounding back are.
void launch_relu_forward_16bit(cudaStream_t stream, std::int64_t count, DType type, const void* x, void* y);
void launch_relu_backward_16bit(cudaStream_t stream, std::int64_t count, DType type, const void* y,
                                const void* dy, void* dx);
// Batch norm's whole passes on 16-bit x, y, dx, dy (s.dtype), or with a
// fused ReLU (s.relu) in any type, with the kernel table's semantics
// (kernels.h): the --sync-bn kernels on this batch's sums, kept in the
// table's per-channel scratch (batchnorm_sums.cu). A fused ReLU's mask is
// a bit a value (CudaKernels::batchnorm_relu_mask_bytes).
void batchnorm_own_forward_train(Context& ctx, const BatchNormShape& s, const void* x, const float* gamma,
                                 const float* beta, void* y, float* saved_mean, float* saved_var,
                                 float* running_mean, float* running_var, void* relu_mask);
void batchnorm_own_forward_infer(Context& ctx, const BatchNormShape& s, const void* x, const float* gamma,
                                 const float* beta, const float* running_mean, const float* running_var, void* y);
void batchnorm_own_backward(Context& ctx, const BatchNormShape& s, const void* x, const void* dy,
                            const float* gamma, const float* saved_mean, const float* saved_var, void* dx,
                            float* dgamma, float* dbeta, const void* relu_mask);

}  // namespace tidepool::cuda
