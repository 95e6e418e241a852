// What may change between iterations: how a run uses device memory. The
// command line parses it once (app/cli.cpp), checkpoints keep it, the
// window edits it and sends it back whole, and the MemoryPlan
// (engine/plan/memory_plan.h) turns it into schedules and a pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "engine/core/choices.h"
#include "engine/core/tensor.h"
#include "engine/device/kernel_shapes.h"

namespace tidepool {

// vDNN's conv algorithm schemes (engine/device/kernels.h).
inline constexpr Choice<ConvScheme> kConvSchemes[] = {
    {ConvScheme::m, "m", "least workspace"},
    {ConvScheme::p, "p", "fastest"},
};
constexpr std::span<const Choice<ConvScheme>> choices(ConvScheme) { return kConvSchemes; }

// vDNN's offload policies: which activations leave for pinned host memory
// after the forward pass has used them, to come back before backward needs
// them.
enum class OffloadMode : std::uint8_t {
  base,      // keep everything on the device
  all,       // every layer's input that backward reads
  conv,      // the inputs of convolutions only
  aconv,     // the inputs of every other convolution, starting with the first
  autoswap,  // as few of `all`'s as fit the budget (engine/plan/autoswap.h)
  dyn,       // the fastest of the fixed modes that fits, found by profiling (engine/tune/dyn_mode.h)
  accudnn,   // all's that go without stalling compute, by the performance model (engine/plan/accudnn_schedule.h)
  // Recomputation instead of transfers (engine/plan/planner.cpp, choose_recomputes):
  recompute,        // Chen et al.'s sqrt(n) segments, cut by bytes at checkpoints everything after goes through
  recompute_cheap,  // SuperNeurons: recompute what layers other than convolutions and linear layers write
  hybrid,           // keep, offload or recompute each, for the least predicted time in the budget (engine/plan/hybrid.h)
};
inline constexpr Choice<OffloadMode> kOffloadModes[] = {
    {OffloadMode::base, "base", "keep everything on the device"},
    {OffloadMode::all, "all", "every layer's input that backward reads goes to pinned host memory"},
    {OffloadMode::conv, "conv", "convolution inputs"},
    {OffloadMode::aconv, "aconv", "every other convolution's input"},
    {OffloadMode::autoswap, "autoswap", "as little of all's as fits --budget, by priority score"},
    {OffloadMode::dyn, "dyn", "the fastest mode that fits, by profiling"},
    {OffloadMode::accudnn, "accudnn",
     "all's inputs that go without stalling compute, the rest kept in --budget (AccUDNN; needs a profile)"},
    {OffloadMode::recompute, "recompute",
     "Chen et al.'s sqrt(n) segments: keep a checkpoint every 1/sqrt(n) of the activations' bytes, recompute the rest "
     "from them"},
    {OffloadMode::recompute_cheap, "recompute-cheap",
     "recompute what batch norm, ReLU, pooling, adds and dropout write; keep convolution and linear outputs "
     "(SuperNeurons)"},
    {OffloadMode::hybrid, "hybrid",
     "keep, offload or recompute each activation, for the least predicted time in --budget (needs a profile)"},
};
constexpr std::span<const Choice<OffloadMode>> choices(OffloadMode) { return kOffloadModes; }

// AutoSwap's priority scores (engine/plan/autoswap.h).
enum class SwapScore : std::uint8_t { doa, aoa, wdoa, swdoa, bo };
inline constexpr Choice<SwapScore> kSwapScores[] = {
    {SwapScore::doa, "doa", "the steps a tensor could be away"},
    {SwapScore::aoa, "aoa", "doa times its size"},
    {SwapScore::wdoa, "wdoa", "the area under the load while it is away"},
    {SwapScore::swdoa, "swdoa", "wdoa on the load the choices so far leave"},
    {SwapScore::bo, "bo", "a·AOA + b·DOA + c·WDOA + d·SWDOA, weights by Bayesian optimisation"},
};
constexpr std::span<const Choice<SwapScore>> choices(SwapScore) { return kSwapScores; }

// The weights of SwapScore::bo's mix, each score normalised over the
// candidates first (engine/plan/autoswap.h). Only their ratios matter;
// engine/plan/swap_weight_search.h finds them by measured overhead.
struct SwapWeights {
  double aoa = 0.25, doa = 0.25, wdoa = 0.25, swdoa = 0.25;
  bool operator==(const SwapWeights&) const = default;
};

// Which buffers a backward step allocates first (vDNN++ §IV): the tensors
// being prefetched for coming layers, or this layer's gradients.
enum class AllocOrder : std::uint8_t { prefetch_first, derivative_first };
inline constexpr Choice<AllocOrder> kAllocOrders[] = {
    {AllocOrder::prefetch_first, "prefetch-first", "prefetched tensors before the layer's gradients"},
    {AllocOrder::derivative_first, "derivative-first", "the layer's gradients first"},
};
constexpr std::span<const Choice<AllocOrder>> choices(AllocOrder) { return kAllocOrders; }

// vDNN: compute and transfers synchronise at the end of every layer.
// vDNN++: the next layer starts at once; an offloaded tensor's memory is
// released when its copy completes, and an allocation waits only while the
// pool has no room (Tidepool parks the block instead, so that placement
// does not depend on timing: engine/memory/parking.h).
enum class TransferMode : std::uint8_t { sync, async };
inline constexpr Choice<TransferMode> kTransferModes[] = {
    {TransferMode::sync, "sync", "vDNN: each layer ends when its transfers do"},
    {TransferMode::async, "async", "vDNN++: the next layer starts at once"},
};
constexpr std::span<const Choice<TransferMode>> choices(TransferMode) { return kTransferModes; }

// Zhuang et al. §4.1 (docs/references.md): where offloaded tensors wait on the host.
// Pinned memory is what the device copies to directly; a copy from or to
// pageable memory goes through a pinned staging buffer, as the CUDA driver
// does (Device::reserve_pageable), and costs a host memcpy more.
enum class HostMemory : std::uint8_t { pinned, pageable };
inline constexpr Choice<HostMemory> kHostMemories[] = {
    {HostMemory::pinned, "pinned", "offloads copy straight into page-locked host memory"},
    {HostMemory::pageable, "pageable",
     "offloads wait in ordinary host memory, copied through a small pinned staging buffer as the CUDA driver does"},
};
constexpr std::span<const Choice<HostMemory>> choices(HostMemory) { return kHostMemories; }

// Zhuang et al. §4.2: who performs an offload's or a prefetch's copy. On
// the transfer streams (what the paper keeps), or by a host thread per
// direction that waits for the event that produced the data and then
// copies synchronously on the device's default stream, ordered with the
// compute (the paper's "CPU multithreading" baseline, Fig. 5b: the copies
// cannot overlap computation). engine/run/copy_threads.h.
enum class CopyEngine : std::uint8_t { stream, threads };
inline constexpr Choice<CopyEngine> kCopyEngines[] = {
    {CopyEngine::stream, "stream", "copies queued on the offload and prefetch streams, overlapping compute"},
    {CopyEngine::threads, "threads",
     "a host thread per direction waits for the data, then copies synchronously in the compute stream's order "
     "(Zhuang's CPU multithreading baseline)"},
};
constexpr std::span<const Choice<CopyEngine>> choices(CopyEngine) { return kCopyEngines; }

// Zhuang et al.'s 16-bit training: the values activations and their
// gradients are stored in. Weights, their gradients and the optimiser stay
// f32 (the master copy). fp16 trains with dynamic loss scaling
// (engine/run/loss_scaler.h), bf16 needs none: its range is f32's.
enum class Precision : std::uint8_t { fp32, bf16, fp16 };
inline constexpr Choice<Precision> kPrecisions[] = {
    {Precision::fp32, "fp32", "32-bit activations"},
    {Precision::bf16, "bf16", "activations and their gradients in bfloat16"},
    {Precision::fp16, "fp16", "activations and their gradients in IEEE half, with dynamic loss scaling"},
};
constexpr std::span<const Choice<Precision>> choices(Precision) { return kPrecisions; }
// The element type activations are stored in.
constexpr DType activation_dtype(Precision p) {
  return p == Precision::bf16 ? DType::bf16 : p == Precision::fp16 ? DType::f16 : DType::f32;
}

// Small enough that resnet20's 1.1 MB of gradients go in two buckets, so
// even a CIFAR network overlaps its all-reduces with backward; DDP's 25 MB
// are for ImageNet networks (--bucket-mb).
inline constexpr std::size_t kDefaultBucketBytes = std::size_t{1} << 20;

struct MemorySettings {
  ConvScheme scheme = ConvScheme::p;
  Precision precision = Precision::fp32;
  OffloadMode mode = OffloadMode::base;
  AllocOrder order = AllocOrder::prefetch_first;
  TransferMode transfer = TransferMode::async;
  // Prefetches kept in flight beyond what the current backward layer needs
  // (vDNN: 1, the next offloaded layer's input).
  int lookahead = 1;
  // vDNN++: offloaded tensors are zero-value compressed into pageable host
  // memory on the transfer streams (engine/run/zero_value_store.h), and the
  // pinned region holds only the two staging slots of Schedule::staging_bytes.
  bool compress = false;
  SwapScore swap_score = SwapScore::swdoa;  // AutoSwap's ranking
  SwapWeights swap_weights;                 // its mix, when swap_score is bo
  std::string heuristic = "best-fit";       // the pool's placement policy (engine/memory/allocator.h)
  std::size_t budget_bytes = 0;             // the pool; 0: what these settings need
  double link_gbps = 0;  // a device that simulates its host link (cpu): its speed, 0 = unthrottled
  // Where uncompressed offloads wait on the host; decided when a run
  // reserves its host memory, so a run in progress cannot change it.
  HostMemory host_memory = HostMemory::pinned;
  CopyEngine copy_engine = CopyEngine::stream;  // may change between iterations
  // Data-parallel training: the ranks the parameter gradients are averaged
  // over (1: none), which the run's communicator decides, and the size of
  // the buckets they are all-reduced in as backward produces them
  // (PyTorch DDP's bucket_cap_mb). Each bucket is a tensor of the plan.
  int ranks = 1;
  std::size_t bucket_bytes = kDefaultBucketBytes;
  // Batch norm normalises with the statistics of the whole global batch,
  // its per-channel sums all-reduced in forward and backward (--sync-bn,
  // PyTorch's SyncBatchNorm); otherwise with each rank's part of it. On
  // one rank both are the same and nothing changes. Like ranks, the run's.
  bool sync_bn = false;
  bool operator==(const MemorySettings&) const = default;
};

}  // namespace tidepool
