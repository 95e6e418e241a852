// Convolution (grouped and depthwise included) on cuDNN.
//
// The arena holds NCHW activations and KCRS weights ([k, c / groups, r, s]),
// which is cuDNN's own NCHW layout, so no pass reorders anything: the
// workspace a pass gets is exactly the chosen algorithm's workspace.
//
// Algorithm choice, vDNN-style, among the algorithms cuDNN reports as
// deterministic (CUDNN_DETERMINISTIC; the atomics-based backward algorithms
// are never candidates) and as run in plain f32 (CUDNN_FMA_MATH, which
// the descriptor asks for and the chosen entry's math type confirms; a
// pass cuDNN has no deterministic algorithm for runs its first
// non-deterministic one, with a warning on stderr, rather than failing):
//  - m ("memory"): the smallest workspace, over every algorithm cuDNN's
//    heuristics (cudnnGet*_v7) say supports the shape; on a tie the one
//    the heuristics rank faster.
//  - p ("performance"): the fastest by measurement. While the device is
//    starting up (before the arena is reserved) cudnnFind*Ex times every
//    algorithm on buffers of the shape's size and the quickest
//    deterministic one wins. After that no memory outside the arena may be
//    taken, so a shape first seen later (an evaluation batch of another
//    size) gets the heuristics' top-ranked deterministic algorithm instead.
//    The m choice never needs more workspace than the p one, since p's
//    algorithm is always among m's candidates.
// Behind the choice come its fallbacks: the other usable algorithms that
// fit its workspace, in the same ranking. cuDNN refuses some
// configurations only when they are run (CUDNN_STATUS_NOT_SUPPORTED,
// before anything is computed); then the next one runs instead, as in
// PyTorch's algorithm iterator, and the cached plan keeps it.
// 16-bit activations (ConvShape::dtype bf16 or f16, --precision): x, y and
// their gradients are given to cuDNN as they are, the weights as a 16-bit
// copy the pass rounds into the front of its workspace, and the weight
// gradient comes out 16-bit there and is widened into the f32 master
// gradient (as PyTorch's autocast does). The descriptor computes in f32
// (cuDNN's PSEUDO_HALF and PSEUDO_BFLOAT16 configurations) and allows
// tensor-op math: the precision asks for it. The determinism rule is
// the same.
// Each (shape, dtype, scheme, pass) is decided once per process and cached (see
// cuda_kernels.cpp), so the planner's workspace and the running algorithm
// agree and a shape always runs the same algorithm (after a refusal, the
// same fallback). `m` is decided by sizes alone and repeats across
// processes. Timing is noisy: `p` searches three times, keeps each
// algorithm's best time and takes the lowest-numbered algorithm within
// kTimingTie of the fastest (engine/device/kernel_choice.h), which still
// lets a near tie fall either way in another process (1 of resnet18's 32
// shapes on an H100). So each timed choice is recorded (ConvPlan::record,
// Device::kernel_choices) and another process adopts it: the app hands rank 0's to every rank, a checkpoint's
// to the resumed run and the machine's earlier ones to a new run.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/cuda/cuda_kernels.h"
#include "engine/device/cuda/cuda_util.h"
#include "engine/device/gpu_queries.h"

namespace tidepool {
namespace {

using namespace cuda;

// The `p` scheme never picks an algorithm with more workspace than
// kMaxConvWorkspace (engine/device/gpu_queries.h), measured or not.

const char* algo_name(ConvPass pass, int algo) {
  static const char* const fwd[] = {
      "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT", "FFT", "FFT_TILING",
      "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char* const bwd_data[] = {"ALGO_0",     "ALGO_1",   "FFT",
                                         "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  static const char* const bwd_filter[] = {
      "ALGO_0", "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED", "FFT_TILING"};
  auto pick = [algo](const char* const* names, int count) {
    return algo >= 0 && algo < count ? names[algo] : "?";
  };
  switch (pass) {
    case ConvPass::forward:
      return pick(fwd, 8);
    case ConvPass::backward_data:
      return pick(bwd_data, 6);
    case ConvPass::backward_weights:
      return pick(bwd_filter, 7);
  }
  return "?";
}

// The fields of cuDNN's three *AlgoPerf_t structs that the choice uses.
// The math type is part of what an entry describes: cuDNN times and ranks
// an (algorithm, math type) pair, and the pair is what must run.
struct Candidate {
  int algo = 0;
  cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
  float time_ms = -1;
  cudnnDeterminism_t determinism = CUDNN_NON_DETERMINISTIC;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

template <class Perf>
std::vector<Candidate> candidates_of(const std::vector<Perf>& perf, int returned) {
  std::vector<Candidate> out;
  for (int i = 0; i < returned; ++i) {
    const Perf& p = perf[static_cast<std::size_t>(i)];
    out.push_back({static_cast<int>(p.algo), p.status, p.time, p.determinism, p.mathType});
  }
  return out;
}

// An algorithm a pass may run, and how it was chosen.
struct Choice {
  int algo = 0;
  bool measured = false;
  std::string name;
};

struct ConvPlan final : CacheEntry {
  TensorDesc x, y;  // x (and dx): [n, c, h, w]; y (and dy): [n, k, oh, ow]
  FilterDesc w;     // [k, c / groups, r, s]
  ConvDesc conv;    // the choice's math type, which every fallback shares (build_plan)
  TensorDesc bias;  // [1, k, 1, 1], when the shape has one
  ConvPass pass = ConvPass::forward;
  // What the planner is told and gives every call: the first choice's
  // workspace. Fixed for good; every fallback fits in it.
  std::size_t workspace = 0;
  // The first choice, then its fallbacks. `current` moves on (never back)
  // when cuDNN refuses one at run time; the plan lives in the process-wide
  // cache, so every later call - every offload mode, every device on this
  // GPU - runs the same algorithm for the pass, which is what keeps their
  // numbers identical. A refusal is deterministic for a shape on a GPU, so
  // another process moves on the same way.
  std::vector<Choice> choices;
  std::atomic<std::size_t> current{0};
  // For a `p` choice made by timing (or adopted from such a line): the
  // shape's text and the math every choice shares, from which
  // Device::kernel_choices() records "<shape> -> <algo> <math>" for the
  // algorithm that runs now (after a refusal, the fallback: another
  // process then starts from what ran here).
  std::string record_shape;
  const char* record_math = "";

  const Choice& choice() const { return choices[current.load(std::memory_order_acquire)]; }
  std::string recorded() const override {
    return record_shape.empty() ? std::string()
                                : kernel_choice_line(record_shape, std::to_string(choice().algo) + " " + record_math);
  }
};

// The math an f32 convolution may run (plain FMA: no TF32) and a 16-bit
// one (tensor cores).
cudnnMathType_t math_for(DType type) { return is_16bit(type) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; }

// Descriptors of one shape; the same for all three passes.
void describe(ConvPlan& p, const ConvShape& s) {
  p.x = tensor_desc(s.n, s.c, s.h, s.w, s.dtype);
  p.y = tensor_desc(s.n, s.k, s.out_h(), s.out_w(), s.dtype);
  p.w = filter_desc(s.k, s.c / s.groups, s.r, s.s, s.dtype);
  cudnnConvolutionDescriptor_t raw = nullptr;
  TP_CALL(cudnnCreateConvolutionDescriptor, &raw);
  p.conv.reset(raw);
  TP_CALL(cudnnSetConvolution2dDescriptor, p.conv.get(), to_int(s.pad_h, "pad_h"),
          to_int(s.pad_w, "pad_w"), to_int(s.stride_h, "stride_h"), to_int(s.stride_w, "stride_w"),
          to_int(s.dil_h, "dil_h"), to_int(s.dil_w, "dil_w"), CUDNN_CROSS_CORRELATION,
          CUDNN_DATA_FLOAT);
  TP_CALL(cudnnSetConvolutionGroupCount, p.conv.get(), to_int(s.groups, "groups"));
  // Plain f32 arithmetic; DEFAULT_MATH would allow TF32 on Ampere and later.
  // (The compute type above stays f32 for 16-bit data too.)
  TP_CALL(cudnnSetConvolutionMathType, p.conv.get(), math_for(s.dtype));
  if (s.bias) p.bias = tensor_desc(1, s.k, 1, 1);

  // cuDNN and ConvShape must agree on the output size, or every pointer
  // the planner computed would be wrong.
  int n = 0, k = 0, oh = 0, ow = 0;
  TP_CALL(cudnnGetConvolution2dForwardOutputDim, p.conv.get(), p.x.get(), p.w.get(), &n, &k, &oh,
          &ow);
  if (n != s.n || k != s.k || oh != s.out_h() || ow != s.out_w()) {
    throw std::logic_error("conv: cuDNN computes an output of " + std::to_string(oh) + "x" +
                           std::to_string(ow) + ", the shape says " + std::to_string(s.out_h()) +
                           "x" + std::to_string(s.out_w()));
  }
}

// cuDNN's heuristic ranking of every algorithm for the pass (fastest first,
// unsupported ones with a failing status).
std::vector<Candidate> ranked(cudnnHandle_t h, const ConvPlan& p) {
  int max = 0, returned = 0;
  switch (p.pass) {
    case ConvPass::forward: {
      TP_CALL(cudnnGetConvolutionForwardAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnGetConvolutionForwardAlgorithm_v7, h, p.x.get(), p.w.get(), p.conv.get(),
              p.y.get(), max, &returned, perf.data());
      return candidates_of(perf, returned);
    }
    case ConvPass::backward_data: {
      TP_CALL(cudnnGetConvolutionBackwardDataAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnGetConvolutionBackwardDataAlgorithm_v7, h, p.w.get(), p.y.get(), p.conv.get(),
              p.x.get(), max, &returned, perf.data());
      return candidates_of(perf, returned);
    }
    case ConvPass::backward_weights: {
      TP_CALL(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnGetConvolutionBackwardFilterAlgorithm_v7, h, p.x.get(), p.y.get(), p.conv.get(),
              p.w.get(), max, &returned, perf.data());
      return candidates_of(perf, returned);
    }
  }
  throw std::invalid_argument("conv: unknown pass");
}

// The workspace an algorithm needs under the plan's (FMA) descriptor, or
// nothing when cuDNN refuses the combination.
bool workspace_of(cudnnHandle_t h, const ConvPlan& p, int algo, std::size_t& bytes) {
  cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
  switch (p.pass) {
    case ConvPass::forward:
      st = cudnnGetConvolutionForwardWorkspaceSize(h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo),
                                                   &bytes);
      break;
    case ConvPass::backward_data:
      st = cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), &bytes);
      break;
    case ConvPass::backward_weights:
      st = cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), &bytes);
      break;
  }
  return st == CUDNN_STATUS_SUCCESS;
}

// Supported, deterministic and of a math type the precision allows: the
// only entries we ever run. For f32 an entry with another math type (a
// tensor-op or TF32 variant that cuDNN may time or rank even under an FMA
// descriptor) is not what the FMA descriptor runs, so its timing or rank
// says nothing about what would. 16-bit data may run tensor-op or plain
// entries (build_plan sets the descriptor to the chosen one's).
bool usable(const Candidate& c, DType type) {
  const bool math = is_16bit(type) ? c.math == CUDNN_TENSOR_OP_MATH || c.math == CUDNN_DEFAULT_MATH ||
                                         c.math == CUDNN_FMA_MATH
                                   : c.math == CUDNN_FMA_MATH;
  return c.status == CUDNN_STATUS_SUCCESS && c.determinism == CUDNN_DETERMINISTIC && math;
}

struct Pick {
  int algo = -1;
  std::size_t workspace = 0;
  float time_ms = -1;
  cudnnMathType_t math = CUDNN_FMA_MATH;
};

// cudnnFind*Ex over buffers of the shape's size: the measured ranking.
// Returns nothing (and the caller falls back to the heuristics) when the
// GPU has no room for the buffers.
std::vector<Candidate> measured(cudnnHandle_t h, const ConvPlan& p, const ConvShape& s,
                                std::size_t max_workspace) {
  const std::size_t element = dtype_bytes(s.dtype);
  const std::size_t x_bytes = static_cast<std::size_t>(s.n * s.c * s.h * s.w) * element;
  const std::size_t w_bytes = static_cast<std::size_t>(s.weight_numel()) * element;
  const std::size_t y_bytes = static_cast<std::size_t>(s.n * s.k * s.out_h() * s.out_w()) * element;
  std::size_t free_bytes = 0, total_bytes = 0;
  TP_CALL(cudaMemGetInfo, &free_bytes, &total_bytes);
  // Leave a margin for cuDNN's own bookkeeping during the search.
  const std::size_t margin = std::size_t{64} << 20;
  const std::size_t operands = x_bytes + w_bytes + y_bytes;
  if (free_bytes < operands + margin) return {};
  const std::size_t ws_bytes = std::min(max_workspace, free_bytes - operands - margin);

  DeviceBuffer x, w, y, ws;
  try {
    x = DeviceBuffer(x_bytes, "a convolution search's input");
    w = DeviceBuffer(w_bytes, "a convolution search's weights");
    y = DeviceBuffer(y_bytes, "a convolution search's output");
    ws = DeviceBuffer(ws_bytes, "a convolution search's workspace");
  } catch (const DeviceError&) {
    return {};
  }
  // Zeros rather than whatever the allocation held: NaN or denormal
  // garbage would time slow paths that real data never takes. On the
  // handle's stream, where the search runs.
  cudaStream_t stream = nullptr;
  TP_CALL(cudnnGetStream, h, &stream);
  for (const DeviceBuffer* b : {&x, &w, &y}) {
    TP_CALL(cudaMemsetAsync, b->get(), 0, b->size(), stream);
  }

  int max = 0, returned = 0;
  std::vector<Candidate> out;
  switch (p.pass) {
    case ConvPass::forward: {
      TP_CALL(cudnnGetConvolutionForwardAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnFindConvolutionForwardAlgorithmEx, h, p.x.get(), x.get(), p.w.get(), w.get(),
              p.conv.get(), p.y.get(), y.get(), max, &returned, perf.data(), ws.get(), ws.size());
      out = candidates_of(perf, returned);
      break;
    }
    case ConvPass::backward_data: {
      TP_CALL(cudnnGetConvolutionBackwardDataAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnFindConvolutionBackwardDataAlgorithmEx, h, p.w.get(), w.get(), p.y.get(),
              y.get(), p.conv.get(), p.x.get(), x.get(), max, &returned, perf.data(), ws.get(),
              ws.size());
      out = candidates_of(perf, returned);
      break;
    }
    case ConvPass::backward_weights: {
      TP_CALL(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, h, &max);
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max));
      TP_CALL(cudnnFindConvolutionBackwardFilterAlgorithmEx, h, p.x.get(), x.get(), p.y.get(),
              y.get(), p.conv.get(), p.w.get(), w.get(), max, &returned, perf.data(), ws.get(),
              ws.size());
      out = candidates_of(perf, returned);
      break;
    }
  }
  // The buffers are freed on return; the search has finished with them
  // (cudnnFind* returns when its timings are in), and cudaFree waits anyway.
  return out;
}

// A shape and pass as a recorded choice names it: every field that can
// change cuDNN's answer.
const char* algo_pass_word(ConvPass pass) {
  return pass == ConvPass::forward ? "forward" : pass == ConvPass::backward_data ? "backward-data" : "backward-weights";
}

std::string shape_text(const ConvShape& s, ConvPass pass) {
  const char* pass_word = algo_pass_word(pass);
  const std::string dtype(to_string(s.dtype));
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "%s %s n=%lld c=%lld h=%lld w=%lld k=%lld r=%lld s=%lld stride=%lldx%lld pad=%lldx%lld "
                "dilation=%lldx%lld groups=%lld bias=%d",
                pass_word, dtype.c_str(), static_cast<long long>(s.n), static_cast<long long>(s.c),
                static_cast<long long>(s.h), static_cast<long long>(s.w), static_cast<long long>(s.k),
                static_cast<long long>(s.r), static_cast<long long>(s.s), static_cast<long long>(s.stride_h),
                static_cast<long long>(s.stride_w), static_cast<long long>(s.pad_h), static_cast<long long>(s.pad_w),
                static_cast<long long>(s.dil_h), static_cast<long long>(s.dil_w), static_cast<long long>(s.groups),
                s.bias ? 1 : 0);
  return buf;
}

const char* math_word(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_FMA_MATH:
      return "fma";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor-op-conversion";
    default:
      return "default";
  }
}

// "<algo> <math>" back into a pick's fields; false for text that is not.
bool parse_choice(const std::string& text, int& algo, cudnnMathType_t& math) {
  char word[40] = {};
  if (std::sscanf(text.c_str(), "%d %39s", &algo, word) != 2) return false;
  for (cudnnMathType_t m : {CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION,
                            CUDNN_DEFAULT_MATH}) {
    if (std::string(word) == math_word(m)) {
      math = m;
      return true;
    }
  }
  return false;
}

std::string describe_pick(ConvPass pass, ConvScheme scheme, const Pick& pick, bool was_measured,
                          std::size_t fallback) {
  char buf[200];
  const std::string then = fallback == 0 ? ""
                                          : "; fallback " + std::to_string(fallback) +
                                                ": cuDNN refused the one before when run";
  if (was_measured && pick.time_ms < 0) {
    std::snprintf(buf, sizeof buf, "%s (p: recorded by an earlier measurement; workspace %s%s)",
                  algo_name(pass, pick.algo), format_bytes(pick.workspace).c_str(), then.c_str());
  } else if (was_measured) {
    std::snprintf(buf, sizeof buf, "%s (p: measured %.3f ms; workspace %s%s)",
                  algo_name(pass, pick.algo), static_cast<double>(pick.time_ms),
                  format_bytes(pick.workspace).c_str(), then.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s (%s: %s; workspace %s%s)", algo_name(pass, pick.algo),
                  scheme == ConvScheme::m ? "m" : "p",
                  scheme == ConvScheme::m ? "least workspace" : "heuristic rank",
                  format_bytes(pick.workspace).c_str(), then.c_str());
  }
  return buf;
}

std::unique_ptr<ConvPlan> build_plan(Context& ctx, const ConvShape& s, ConvScheme scheme,
                                     ConvPass pass) {
  validate(s);
  auto plan = std::make_unique<ConvPlan>();
  plan->pass = pass;
  describe(*plan, s);
  // The planning handle, not the table's: see Shared::planning.
  cudnnHandle_t h = ctx.shared->planning.get();

  // Every usable algorithm the heuristics know, with its workspace, in
  // their ranking order.
  std::vector<Pick> options, nondeterministic;
  for (const Candidate& c : ranked(h, *plan)) {
    std::size_t bytes = 0;
    if (usable(c, s.dtype) && workspace_of(h, *plan, c.algo, bytes))
      options.push_back({c.algo, bytes, -1, c.math});
    Candidate any = c;
    any.determinism = CUDNN_DETERMINISTIC;
    if (options.empty() && usable(any, s.dtype) && workspace_of(h, *plan, c.algo, bytes))
      nondeterministic.push_back({c.algo, bytes, -1, c.math});
  }
  // Some shapes have no deterministic algorithm for a pass (cuDNN has none
  // for some grouped, depthwise or dilated backward-weights passes, or bf16
  // depthwise). Failing the run would help nobody: the heuristics' first
  // non-deterministic one runs, and the user is told what it costs.
  if (options.empty() && !nondeterministic.empty()) {
    options.assign(nondeterministic.begin(), nondeterministic.begin() + 1);
    std::fprintf(stderr,
                 "tidepool: cuDNN has no deterministic %s algorithm for the %s convolution c=%lld k=%lld "
                 "groups=%lld %lldx%lld; it runs %s, which is not deterministic: results may differ in the "
                 "last bits from run to run and between offload modes\n",
                 algo_pass_word(pass), std::string(to_string(s.dtype)).c_str(), static_cast<long long>(s.c),
                 static_cast<long long>(s.k), static_cast<long long>(s.groups), static_cast<long long>(s.r),
                 static_cast<long long>(s.s), algo_name(pass, options.front().algo));
  }
  if (options.empty()) {
    throw CudaError(CudaError::Library::cudnn, "cudnnGetConvolution*Algorithm_v7",
                    static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED",
                    "no deterministic " + std::string(to_string(s.dtype)) + " algorithm for c=" + std::to_string(s.c) +
                        " k=" + std::to_string(s.k) + " groups=" + std::to_string(s.groups));
  }

  // m: the least workspace; strictly smaller, so on a tie the better-ranked
  // one stays.
  Pick least = options.front();
  for (const Pick& o : options)
    if (o.workspace < least.workspace) least = o;
  // p without measurement: the top-ranked one within the workspace cap.
  Pick pick = least;
  for (const Pick& o : options) {
    if (o.workspace <= kMaxConvWorkspace) {
      pick = o;
      break;
    }
  }
  // The ranking the choice came from, for its fallbacks: the measured one
  // when the choice was measured, else the heuristics'.
  std::vector<Pick> ranking = options;
  bool was_measured = false;
  const std::string shape = shape_text(s, pass);
  int adopted_algo = -1;
  cudnnMathType_t adopted_math = CUDNN_FMA_MATH;
  const auto adopted = scheme == ConvScheme::p && parse_choice(ctx.shared->plans.adopted_choice(shape), adopted_algo,
                                                               adopted_math)
                           ? std::find_if(options.begin(), options.end(),
                                          [&](const Pick& o) { return o.algo == adopted_algo && o.math == adopted_math; })
                           : options.end();
  if (scheme == ConvScheme::m) {
    pick = least;
  } else if (adopted != options.end() && adopted->workspace <= kMaxConvWorkspace) {
    // Decided by an earlier measurement (a checkpoint, rank 0): the same
    // algorithm, so the same bits. Not available here (another GPU or
    // cuDNN), the shape is timed as if nothing had been recorded.
    pick = *adopted;
    was_measured = true;
  } else if (ctx.shared->may_measure) {
    std::size_t largest = 0;
    for (const Pick& o : options) largest = std::max(largest, o.workspace);
    // Each usable (algorithm, math) pair whose workspace the search could
    // offer (and the heuristics agree on), with its best time over the
    // searches.
    std::vector<Pick> timed_ranking;
    for (int search = 0; search < kTimingSearches; ++search) {
      for (const Candidate& c : measured(h, *plan, s, std::min(largest, kMaxConvWorkspace))) {
        if (!usable(c, s.dtype) || c.time_ms < 0) continue;
        auto known = std::find_if(options.begin(), options.end(),
                                  [&](const Pick& o) { return o.algo == c.algo && o.math == c.math; });
        if (known == options.end() || known->workspace > kMaxConvWorkspace) continue;
        keep_best_time(timed_ranking, Pick{c.algo, known->workspace, c.time_ms, c.math});
      }
    }
    if (!timed_ranking.empty()) {
      // Fastest first; the pick is the lowest-numbered of those tied with
      // the fastest (engine/device/kernel_choice.h).
      const std::size_t chosen = pick_timed(timed_ranking);
      pick = timed_ranking[chosen];
      ranking = std::move(timed_ranking);
      was_measured = true;
    }
  }
  // What runs is the pair that was chosen: the descriptor takes the
  // entry's math type (for f32 FMA, as usable() required and describe()
  // asked), and every fallback is an entry of the same math type, so the
  // descriptor never changes. 16-bit entries may be tensor-op or plain:
  // their workspaces were asked under the tensor-op descriptor, so they
  // are asked again under the one that runs.
  TP_CALL(cudnnSetConvolutionMathType, plan->conv.get(), pick.math);
  if (is_16bit(s.dtype)) {
    auto requery = [&](Pick& o) {
      std::size_t bytes = 0;
      if (!workspace_of(h, *plan, o.algo, bytes)) return false;
      o.workspace = bytes;
      return true;
    };
    if (!requery(pick))
      throw CudaError(CudaError::Library::cudnn, "cudnnGetConvolution*WorkspaceSize",
                      static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED), "CUDNN_STATUS_NOT_SUPPORTED",
                      std::string("the chosen ") + algo_name(pass, pick.algo) + " under its own math type");
    // Only the chosen math type's entries can be fallbacks (the loop below).
    for (Pick& o : ranking)
      if (o.math == pick.math && !requery(o)) o.workspace = std::numeric_limits<std::size_t>::max();
  }
  plan->workspace = pick.workspace;
  if (was_measured) {
    plan->record_shape = shape;
    plan->record_math = math_word(pick.math);
  }
  plan->choices.push_back(
      {pick.algo, was_measured, describe_pick(pass, scheme, pick, was_measured, 0)});
  for (const Pick& o : ranking) {
    if (o.algo == pick.algo || o.math != pick.math || o.workspace > pick.workspace) continue;
    plan->choices.push_back({o.algo, was_measured,
                             describe_pick(pass, scheme, o, was_measured, plan->choices.size())});
  }
  return plan;
}

// Runs `call` (one cuDNN convolution call, given an algorithm) with the
// plan's current choice, moving on to the next when cuDNN refuses it as
// not supported (see ConvPlan). Any other failure, or a refusal of the
// last choice, is a CudaError naming `what`.
template <class Call>
void run_choice(ConvPlan& p, const char* what, Call&& call) {
  for (;;) {
    std::size_t i = p.current.load(std::memory_order_acquire);
    const cudnnStatus_t st = call(p.choices[i].algo);
    if (st == CUDNN_STATUS_SUCCESS) return;
    if (CUDNN_STATUS_CATEGORY(st) != CUDNN_STATUS_NOT_SUPPORTED || i + 1 >= p.choices.size()) {
      check(st, what);
    }
    // Nothing ran; leave no launch error behind for an unrelated check.
    (void)cudaGetLastError();
    // Another thread may have moved on already; then this one follows.
    p.current.compare_exchange_strong(i, i + 1, std::memory_order_acq_rel);
  }
}

ConvPlan& plan_for(Context& ctx, const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  const CacheKey key = conv_key(static_cast<std::int64_t>(Op::conv), s, scheme, pass);
  return ctx.shared->plans.entry<ConvPlan>(key, [&] { return build_plan(ctx, s, scheme, pass); });
}

void* checked_workspace(const ConvPlan& plan, void* workspace) {
  if (plan.workspace > 0 && workspace == nullptr) {
    throw std::invalid_argument("conv: this pass needs " + std::to_string(plan.workspace) +
                                " bytes of workspace and got none");
  }
  return plan.workspace > 0 ? workspace : nullptr;
}

void require_bias(const ConvShape& s, const void* p, const char* what) {
  if (s.bias && p == nullptr) {
    throw std::invalid_argument(std::string("conv: the shape has a bias but ") + what + " is null");
  }
}

constexpr float kOne = 1.0f, kZero = 0.0f;

// A 16-bit pass's copy of the weights (forward, backward data) or of their
// gradient (backward weights) is at the front of its workspace
// (conv_weights_copy_bytes); cuDNN's workspace follows, aligned as the
// arena's blocks are.
struct Workspace {
  void* weights = nullptr;  // the 16-bit copy (null in f32)
  void* cudnn = nullptr;
};

Workspace split(const ConvShape& s, const ConvPlan& plan, void* workspace) {
  const std::size_t copy = conv_weights_copy_bytes(s);
  if (copy > 0 && workspace == nullptr)
    throw std::invalid_argument("conv: a 16-bit pass needs " + std::to_string(copy) +
                                " bytes of workspace for its weights and got none");
  auto* base = static_cast<std::byte*>(workspace);
  return {copy > 0 ? base : nullptr, checked_workspace(plan, copy > 0 ? base + copy : workspace)};
}

// The weights a pass hands cuDNN: w itself in f32, else its 16-bit copy,
// rounded into the workspace first.
const void* pass_weights(Kernels& k, const ConvShape& s, const float* w, const Workspace& ws) {
  if (!ws.weights) return w;
  k.convert(s.weight_numel(), DType::f32, w, s.dtype, ws.weights, 1.0f);
  return ws.weights;
}

}  // namespace

std::size_t CudaKernels::conv_workspace_bytes(const ConvShape& s, ConvScheme scheme,
                                              ConvPass pass) const {
  bind_device(ctx_->shared->ordinal);  // may come from any thread
  return conv_weights_copy_bytes(s) + plan_for(*ctx_, s, scheme, pass).workspace;
}

std::string CudaKernels::conv_algorithm_name(const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  bind_device(ctx_->shared->ordinal);  // may come from any thread
  return plan_for(*ctx_, s, scheme, pass).choice().name;
}

bool CudaKernels::conv_algorithm_measured(const ConvShape& s, ConvScheme scheme, ConvPass pass) {
  bind_device(ctx_->shared->ordinal);  // may come from any thread
  return plan_for(*ctx_, s, scheme, pass).choice().measured;
}

void CudaKernels::conv_forward(const ConvShape& s, ConvScheme scheme, const void* x,
                               const float* w, const float* b, void* y, void* workspace) {
  require_bias(s, b, "b");
  ConvPlan& p = plan_for(*ctx_, s, scheme, ConvPass::forward);
  cudnnHandle_t h = ctx_->cudnn.get();
  const Workspace ws = split(s, p, workspace);
  const void* weights = pass_weights(*this, s, w, ws);
  run_choice(p, "cudnnConvolutionForward", [&](int algo) {
    return cudnnConvolutionForward(h, &kOne, p.x.get(), x, p.w.get(), weights, p.conv.get(),
                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws.cudnn, p.workspace,
                                   &kZero, p.y.get(), y);
  });
  // y += b, broadcast over n, h, w.
  if (!s.bias) return;
  if (is_16bit(s.dtype))
    launch_add_channel_bias(ctx_->stream, y, s.dtype, b, s.n, s.k, s.out_h() * s.out_w());
  else
    TP_CALL(cudnnAddTensor, h, &kOne, p.bias.get(), b, &kOne, p.y.get(), y);
}

void CudaKernels::conv_backward_data(const ConvShape& s, ConvScheme scheme, const void* dy,
                                     const float* w, void* dx, void* workspace) {
  ConvPlan& p = plan_for(*ctx_, s, scheme, ConvPass::backward_data);
  const Workspace ws = split(s, p, workspace);
  const void* weights = pass_weights(*this, s, w, ws);
  run_choice(p, "cudnnConvolutionBackwardData", [&](int algo) {
    return cudnnConvolutionBackwardData(
        ctx_->cudnn.get(), &kOne, p.w.get(), weights, p.y.get(), dy, p.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws.cudnn, p.workspace, &kZero, p.x.get(), dx);
  });
}

void CudaKernels::conv_backward_weights(const ConvShape& s, ConvScheme scheme, const void* x,
                                        const void* dy, float* dw, float* db, void* workspace) {
  require_bias(s, db, "db");
  ConvPlan& p = plan_for(*ctx_, s, scheme, ConvPass::backward_weights);
  const Workspace ws = split(s, p, workspace);
  void* grad = ws.weights ? ws.weights : dw;
  run_choice(p, "cudnnConvolutionBackwardFilter", [&](int algo) {
    return cudnnConvolutionBackwardFilter(
        ctx_->cudnn.get(), &kOne, p.x.get(), x, p.y.get(), dy, p.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws.cudnn, p.workspace, &kZero, p.w.get(), grad);
  });
  // A 16-bit gradient widens into the f32 one (exactly).
  if (ws.weights) convert(s.weight_numel(), s.dtype, ws.weights, DType::f32, dw, 1.0f);
  // The bias gradient is a per-channel sum of dy; ours is a fixed-order
  // reduction, so it repeats bit for bit (see reductions.cu).
  if (s.bias) launch_channel_sum(ctx_->stream, dy, s.dtype, db, s.n, s.k, s.out_h() * s.out_w());
}

}  // namespace tidepool
