// A training session: the data, the model, the device and the trainer of
// one run, stepped one iteration at a time. `--batch` (app/batch_run.cpp)
// and the window's runner thread (app/session_runner.cpp) both train
// through it, so they plan, place and train identically.
//
//   TrainingSession session(settings);       // loads data, builds the model
//   session.start(&sink);                    // device, arena, parameters
//   while (!session.finished()) {
//     StepReport r = session.train_iteration();
//     if (r.epoch_end && !session.diverged()) session.evaluate();
//     if (session.diverged()) break;       // session.divergence() says where and why
//   }
//   session.apply(other_memory_settings);    // between iterations: applied, or refused with the reason
//
// Divergence is checked here, once for both: after every iteration the
// loss must be finite and so must every parameter (see train_iteration),
// and every evaluation batch's loss. A session that diverged trains no
// more: the parameters are garbage.
//
// A session is used from one thread; the window's runner owns the one
// mailbox between the window and training.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "datasets/dataset.h"
#include "datasets/loader.h"
#include "engine/comm/communicator.h"
#include "engine/core/network.h"
#include "engine/device/device.h"
#include "engine/observe/events.h"
#include "engine/perf/perf_model.h"
#include "engine/plan/swap_weight_search.h"
#include "engine/tune/dyn_mode.h"
#include "engine/run/run_settings.h"
#include "engine/run/trainer.h"
#include "ui/session_link.h"

namespace tidepool::app {

struct Evaluation {
  double loss = 0, accuracy = 0, top5 = 0;
  std::int64_t images = 0;
};

struct StepReport {
  IterationResult result;
  double seconds = 0;  // wall time of the iteration (the sim device: its simulated time)
  float lr = 0;
  std::int64_t images = 0;
  bool epoch_end = false;        // that was the epoch's last batch
  std::optional<DynChoice> dyn;  // `--mode dyn` chose its mode before this step
};

struct SessionOptions {
  // Reserve an arena with room for every heuristic in base mode, so that a
  // later budget may grow (the window's budget slider); otherwise the arena
  // is the first budget.
  bool room_to_grow = false;
  // The window draws on the same machine: the cpu device's workers give it
  // precedence (see make_device).
  bool for_window = false;
  // Data-parallel training: the ranks this session is one of (not owned).
  // Its --batch-size is the global batch, split evenly over them; each
  // rank reads its shard of every global batch, gradients are averaged,
  // and the figures it reports (losses, accuracies) are the whole
  // batch's. Null: one process.
  Communicator* comm = nullptr;
  // Kernel choices an earlier run made by timing (its checkpoint's): the
  // device adopts them before it plans (Device::adopt_kernel_choices).
  std::vector<std::string> kernel_choices;
  // A profile measured for this run (--tune without --profile): planned
  // with instead of reading the file settings.profile names, which the run
  // writes once it has passed every check (not owned).
  const Profile* measured_profile = nullptr;
  // Makes the device in place of the settings' (make_device): a test's
  // device that chooses kernels by timing a fake table
  // (tests/testing/timing_device.h), so that what a resumed run does with
  // recorded choices is checked without a GPU. Empty: the settings' device.
  std::function<std::unique_ptr<Device>()> make_device;
};

// What became of settings given to apply(): applied (from the next
// iteration on) or refused, and the words for either.
struct ApplyOutcome {
  bool applied = false;
  std::string message;
};

class TrainingSession {
 public:
  // Checks the settings and loads the data and the model; throws with a
  // message for the user (unknown model, missing data, bad setting).
  explicit TrainingSession(const RunSettings& settings, SessionOptions session = {});
  ~TrainingSession();

  // Creates the device and the trainer (arena, parameters) with events
  // going to `sink` (may be null). Throws MemoryRefusal when the budget is
  // too small, naming the smallest that works.
  void start(EventSink* sink);
  // Continues from a checkpoint's state and position.
  void restore(const std::vector<float>& state, std::int64_t epoch, std::int64_t batch_in_epoch,
               std::int64_t iteration, const LossScalerState& loss_scale);

  // Trains the next batch (starting an epoch when needed), then checks it
  // for divergence. Throws std::runtime_error with the divergence when the
  // session has diverged already.
  StepReport train_iteration();
  // The test set in evaluation mode; a non-finite loss is divergence and
  // ends it (returning that loss and nothing else). Its events do not
  // reach the sink: the views and traces show training iterations only.
  Evaluation evaluate();

  // Whether an iteration or evaluation produced a NaN or an infinity, and
  // the message saying where: "training diverged at iteration 3 of 100
  // (epoch 1, learning rate 1e+06): the loss is nan; ...".
  bool diverged() const { return !divergence_.empty(); }
  const std::string& divergence() const { return divergence_; }

  // New memory settings from the next iteration on: re-planned and
  // re-placed, or refused with the reason (a budget below the smallest
  // workable names it) while the old ones stay. Mode dyn profiles the
  // modes that fit at the next iteration.
  ApplyOutcome apply(const MemorySettings& settings);

  // Data-parallel: this process's rank and the number of ranks (0 and 1
  // on one process), and the batch each rank trains (--batch-size / ranks).
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int ranks() const { return comm_ ? comm_->size() : 1; }
  std::int64_t rank_batch() const { return rank_batch_; }
  Communicator* comm() const { return comm_; }
  // Every rank's parameter checksum agrees with rank 0's (batch norm's
  // statistics made rank 0's first); throws CommError naming the ranks
  // that differ. Every rank calls it. On one process: nothing to check.
  void check_ranks_agree();

  bool finished() const { return iteration_ >= total_; }
  std::int64_t iteration() const { return iteration_; }
  std::int64_t total_iterations() const { return total_; }
  std::int64_t epoch() const { return epoch_; }
  std::int64_t epochs() const { return epochs_; }
  std::int64_t batch_in_epoch() const { return batch_in_epoch_; }
  std::int64_t batches_per_epoch() const { return per_epoch_; }

  // The run's settings, the memory ones as in effect.
  const RunSettings& settings() const { return settings_; }
  const Network& network() const { return *network_; }
  const datasets::Dataset& train_set() const { return *train_set_; }
  const datasets::Dataset& test_set() const { return *test_set_; }
  Device& device() { return *device_; }
  Trainer& trainer() { return *trainer_; }
  // AutoSwap's bo: the search start() ran for its weights (none otherwise).
  const std::optional<SwapWeightSearch>& swap_weight_search() const { return swap_weight_search_; }
  // What the window shows of it (the state and the last request's outcome
  // are the runner's to fill in).
  ui::SessionStatus status() const;

 private:
  void share_kernel_choices(const MemorySettings& memory);
  RunSettings settings_;
  SessionOptions session_options_;
  std::unique_ptr<datasets::Dataset> train_set_, test_set_;
  std::unique_ptr<Network> network_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<PerfModel> model_;  // --profile on a real device: the planner's model
  std::optional<SwapWeightSearch> swap_weight_search_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<datasets::BatchLoader> train_loader_, test_loader_;
  std::size_t train_staging_bytes_ = 0, eval_staging_bytes_ = 0;
  Communicator* comm_ = nullptr;  // null, or more than one rank
  std::int64_t rank_batch_ = 0;
  std::int64_t per_epoch_ = 0, epochs_ = 0, total_ = 0;
  std::int64_t epoch_ = 0, batch_in_epoch_ = 0, iteration_ = 0;
  bool epoch_open_ = false;  // the loader has started the current epoch
  bool choose_dyn_ = false;  // mode dyn: profile at the next iteration
  float test_accuracy_ = -1;
  std::string divergence_;

  void diverge(const std::string& what);
  // `o` as this rank's shard of every global batch.
  datasets::LoaderOptions loader_options(datasets::LoaderOptions o) const;
};

}  // namespace tidepool::app
