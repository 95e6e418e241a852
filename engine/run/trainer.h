// A training session on one device: plans the network, sizes and reserves
// the arena, places and initialises the parameters, and runs train and eval
// iterations through the executor.
//
//   CpuDevice device;
//   Network net = models::resnet20_cifar(10);
//   Trainer trainer(device, net, {.batch = 128, .seed = 1});
//   IterationResult r = trainer.train_step(images, labels);
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/device/device.h"
#include "engine/observe/events.h"
#include "engine/run/executor.h"
#include "engine/core/network.h"
#include "engine/plan/schedule.h"

namespace tidepool {

struct TrainerOptions {
  std::int64_t batch = 128;
  // Conv scheme, offload mode, allocation order, transfer semantics (the
  // phase is the trainer's to set).
  PlanSettings plan;
  std::string heuristic = "best-fit";
  // The memory budget: the pool every device tensor lives in. 0 sizes it to
  // the footprint a dry run of the train and eval schedules needs.
  std::size_t budget_bytes = 0;
  // Device memory reserved once for the run; later budgets may not exceed
  // it. 0: the first budget.
  std::size_t arena_bytes = 0;
  std::uint64_t seed = 1;
  SgdOptions sgd;
  // Pinned host bytes reserved for the caller (input batches are staged
  // there, so their host-to-device copies come from pinned memory).
  std::size_t staging_bytes = 0;
  // Host threads that compress or decompress one offloaded tensor
  // (PlanSettings::compress); 0: a quarter of the machine's, at least one.
  int compress_threads = 0;
};

// What TrainerOptions::compress_threads = 0 means on this machine.
int default_compress_threads();

class Trainer {
 public:
  // Throws std::invalid_argument for bad options and DeviceError when the
  // device cannot hold the arena or the arena cannot hold the schedule.
  Trainer(Device& device, const Network& network, TrainerOptions options, EventSink* sink = nullptr);
  ~Trainer();

  // One SGD step on a batch of `options.batch` images (host memory, NCHW f32)
  // and labels (i32).
  IterationResult train_step(const float* images, const std::int32_t* labels);
  // Forward pass in evaluation mode on `batch` images (any batch size up to
  // the training batch): loss and correct count, no update.
  IterationResult eval_step(const float* images, const std::int32_t* labels, std::int64_t batch);

  // Re-plans with new memory settings, applied from the next iteration on.
  // Throws DeviceError or std::invalid_argument with the reason (and the
  // smallest budget that would work) and then changes nothing.
  void apply(const PlanSettings& plan, const std::string& heuristic, std::size_t budget_bytes);

  void set_learning_rate(float lr) { options_.sgd.lr = lr; }
  // Where events go from now on (null: nowhere).
  void set_sink(EventSink* sink) {
    sink_ = sink;
    executor_->set_sink(sink);
  }
  EventSink* sink() const { return sink_; }
  std::int64_t iteration() const { return iteration_; }
  void set_iteration(std::int64_t i) { iteration_ = i; }

  const Schedule& train_schedule() const { return train_; }
  const TrainerOptions& options() const { return options_; }
  std::size_t arena_bytes() const { return arena_bytes_; }
  std::size_t pool_bytes() const { return pool_bytes_; }
  // The smallest pool in which the current settings' schedules were found
  // to run (a sufficient size, see pool_search).
  std::size_t minimum_budget() const { return minimum_budget_; }
  // Async transfers: how many offloaded blocks stay parked at once, so that
  // forward work does not take them over and wait for their copies
  // (Schedule::park_horizon: 0 none, kParkUntilNeeded all). Where a larger
  // pool was found to park more (one at a time when none now, else every
  // one until needed), parking_budget() is that pool; otherwise 0.
  int park_horizon() const { return train_.park_horizon; }
  bool parks_offloads() const { return train_.park_horizon > 0; }
  std::size_t parking_budget() const { return parking_budget_; }
  const Allocator& allocator() const { return *allocator_; }
  std::span<std::byte> staging() const { return staging_; }
  // Pinned host bytes reserved for offloaded tensors (the worst mode's, or
  // with compression its staging slots).
  std::size_t offload_pinned_bytes() const { return offload_region_.size(); }

  // Every weight-role tensor (parameters and batchnorm running statistics)
  // in schedule order, copied to the host.
  std::vector<float> read_parameters();
  void write_parameters(const std::vector<float>& values);
  // Reads or writes the persistent state (parameters, momenta) as one blob,
  // for checkpoints.
  std::vector<float> read_state();
  void write_state(const std::vector<float>& state);
  std::uint64_t param_checksum();

 private:
  struct Validated {
    Schedule train, eval;
    std::size_t minimum = 0;  // the smallest pool found to serve both
    std::size_t pool = 0;     // the pool these settings get
    std::size_t parking_budget = 0;   // see Trainer::parking_budget
  };
  Validated validate(const PlanSettings& plan, const std::string& heuristic, std::size_t budget) const;
  void decide_parking(Validated& v, const std::string& heuristic) const;
  void commit(Validated v, bool new_pool);
  const Schedule& eval_schedule(std::int64_t batch);
  void initialise_parameters();
  std::vector<float> read_tensors(const std::vector<int>& ids);
  void write_tensors(const std::vector<int>& ids, const std::vector<float>& values, const char* what);

  Device& device_;
  const Network& network_;
  TrainerOptions options_;
  EventSink* sink_;
  Schedule train_;
  std::map<std::int64_t, Schedule> eval_;  // by batch size
  std::size_t arena_bytes_ = 0;
  std::size_t minimum_budget_ = 0;
  std::size_t parking_budget_ = 0;
  std::size_t pool_bytes_ = 0;
  std::span<std::byte> offload_region_;
  std::byte* arena_ = nullptr;
  std::span<std::byte> staging_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<Executor> executor_;
  Placement placement_;
  std::int64_t iteration_ = 0;
};

}  // namespace tidepool
