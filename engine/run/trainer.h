// A training session on one device: executes a MemoryPlan
// (engine/plan/memory_plan.h) — reserves what it says, places and
// initialises the parameters — and runs train and eval iterations through
// the executor. What the pool is, what is offloaded and parked, is the
// plan's to decide; the trainer asks for a plan and runs it.
//
//   CpuDevice device;
//   Network net = models::resnet20_cifar(10);
//   Trainer trainer(device, net, {.batch = 128, .memory = {.mode = OffloadMode::conv}, .seed = 1});
//   IterationResult r = trainer.train_step(images, labels);
//   trainer.apply({.mode = OffloadMode::all, .budget_bytes = 64 << 20});   // from the next iteration on
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/observe/events.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/executor.h"
#include "engine/run/loss_scaler.h"

namespace tidepool {

struct TrainerOptions {
  std::int64_t batch = 128;
  MemorySettings memory;  // planned when the trainer starts (memory().settings: those in effect)
  std::uint64_t seed = 1;
  SgdOptions sgd;
  // Pinned host bytes reserved for the caller (input batches are staged
  // there, so their host-to-device copies come from pinned memory).
  std::size_t staging_bytes = 0;
  // Host threads that compress or decompress one offloaded tensor
  // (MemorySettings::compress); 0: a quarter of the machine's, at least one.
  int compress_threads = 0;
  // Reserve an arena later budgets may grow into (MemoryLimits::room_to_grow).
  bool room_to_grow = false;
  // The performance model plans use (mode accudnn, predictions); null: the
  // device's own (Device::perf_model), if it has one. Not owned.
  const PerfModel* model = nullptr;
  // Data-parallel training: the ranks this trainer is one of (not owned;
  // memory.ranks must be its size). Null: one process.
  Communicator* comm = nullptr;
};

// What TrainerOptions::compress_threads = 0 means on this machine.
int default_compress_threads();

class Trainer {
 public:
  // Throws std::invalid_argument for bad options, MemoryRefusal when the
  // memory settings cannot work (naming the smallest budget that does) and
  // DeviceError when the device cannot hold what the plan reserves.
  Trainer(Device& device, const Network& network, TrainerOptions options, EventSink* sink = nullptr);
  ~Trainer();

  // One SGD step on a batch of `options.batch` images (host memory, NCHW f32)
  // and labels (i32). In fp16, at the loss scaler's scale, which the step's
  // outcome then updates (a step whose gradients overflowed is skipped:
  // IterationResult::skipped). From staging() (where the app's loaders put them) the
  // upload is an asynchronous copy from pinned memory; from pageable memory
  // a cuda device copies synchronously, as CUDA does for pageable memory.
  IterationResult train_step(const float* images, const std::int32_t* labels);
  // Forward pass in evaluation mode on `batch` images (any batch size up to
  // the training batch): loss and correct count, no update.
  IterationResult eval_step(const float* images, const std::int32_t* labels, std::int64_t batch);

  // Plans `settings` (with the run's ranks, buckets and sync_bn, whatever they say)
  // against what this run has reserved and executes the
  // plan from the next iteration on. Throws (MemoryRefusal with the
  // smallest budget that works, or std::invalid_argument) and then changes
  // nothing.
  const MemoryPlan& apply(const MemorySettings& settings);

  void set_learning_rate(float lr) { options_.sgd.lr = lr; }
  // Where events go from now on (null: nowhere).
  void set_sink(EventSink* sink) {
    sink_ = sink;
    executor_->set_sink(sink);
  }
  EventSink* sink() const { return sink_; }
  std::int64_t iteration() const { return iteration_; }
  void set_iteration(std::int64_t i) { iteration_ = i; }
  // fp16's dynamic loss scale (kept, untouched, in the other precisions, so
  // that a run switching to fp16 and back continues it); part of a
  // checkpoint.
  const LossScaler& loss_scaler() const { return loss_scaler_; }
  void set_loss_scaler(const LossScalerState& state) { loss_scaler_ = LossScaler(state); }

  // The plan being executed: schedules, pool, figures.
  const MemoryPlan& memory() const { return plan_; }
  const Schedule& train_schedule() const { return plan_.train; }
  const TrainerOptions& options() const { return options_; }
  // The performance model plans are made with (TrainerOptions::model), or null.
  const PerfModel* model() const { return options_.model ? options_.model : device_.perf_model(); }
  const DevicePool& pool() const { return executor_->pool(); }
  std::span<std::byte> staging() const { return staging_; }

  // Every weight-role tensor (parameters and batchnorm running statistics)
  // in schedule order, copied to the host.
  std::vector<float> read_parameters();
  void write_parameters(const std::vector<float>& values);
  // Reads or writes the persistent state (parameters, momenta) as one blob,
  // for checkpoints.
  std::vector<float> read_state();
  void write_state(const std::vector<float>& state);
  std::uint64_t param_checksum();
  // Data-parallel training: batch norm's running statistics are each
  // rank's own (gradients are averaged, statistics are not); this copies
  // rank 0's to every rank, as PyTorch DDP's broadcast_buffers does, so
  // that evaluations and checkpoints agree. Every rank calls it. With
  // --sync-bn (MemorySettings::sync_bn) every rank computes the same
  // statistics from the same summed sums, and there is nothing to send.
  void broadcast_statistics();
  // The name of the first weight-role tensor (parameters, batchnorm running
  // statistics) holding a NaN or an infinity; empty when all are finite.
  // Copies them all to a host buffer kept for the purpose (the parameters'
  // size) and reads it: O(parameters), a small part of an iteration.
  std::string nonfinite_parameter();

 private:
  void execute(MemoryPlan plan);
  const Schedule& eval_schedule(std::int64_t batch);
  void initialise_parameters();
  void write(const std::vector<int>& ids, const std::vector<float>& values, const char* what);

  Device& device_;
  const Network& network_;
  TrainerOptions options_;
  EventSink* sink_;
  MemoryPlan plan_;
  std::map<std::int64_t, Schedule> short_eval_;  // eval schedules at smaller batches, by batch size
  std::span<std::byte> offload_region_;
  std::byte* arena_ = nullptr;
  std::span<std::byte> staging_;
  std::unique_ptr<Executor> executor_;
  std::int64_t iteration_ = 0;
  LossScaler loss_scaler_;
  std::vector<float> check_buffer_;  // nonfinite_parameter()'s copy, reused
};

}  // namespace tidepool
