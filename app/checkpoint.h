// Checkpoints: the trainer's persistent state (parameters, batchnorm
// statistics, momenta) plus where the run was and how it was configured.
//
// File layout (little-endian):
//   8 bytes   magic "TIDEPCK1"
//   8 bytes   header length H
//   H bytes   JSON header: run settings, epoch, iteration, batch_in_epoch,
//             epoch_so_far, loss_scale, values
//   4*V bytes the state, V = header.values floats
//   8 bytes   FNV-1a of everything before it
//
// Durability: the bytes go to `<file>.tmp`, which is fsynced, renamed over
// `<file>`, and the folder fsynced, so a kill or a power cut at any moment
// leaves either the old checkpoint or the new one, never a torn one. Only
// `<file>` is ever read; a `.tmp` left by a kill is overwritten by the next
// save (and the run folder removes it when it opens). The checksum catches
// what the file system still gets wrong.
//
// Test hook: with TIDEPOOL_TEST_CHECKPOINT_STALL=N in the environment, the
// N-th save of this process writes half of its temporary file, says so on
// stderr ("checkpoint save stalls half written") and sleeps before going
// on, so that a test can kill the process in the middle of a checkpoint
// write without depending on timing (tests/app/kill_resume_test.cpp). The
// sleep (10 minutes) only bounds a process whose test died before killing
// it; the test kills it as soon as it says so. Nothing else reads the
// variable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <stdexcept>
#include <vector>

#include "engine/run/loss_scaler.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the batches of the current epoch trained before the checkpoint added
// up to, so that a run resumed mid-epoch writes the epoch's metrics row as
// an uninterrupted run does. All zero at an epoch boundary.
struct EpochSoFar {
  std::int64_t images = 0, correct = 0;
  double loss_sum = 0;       // batch loss x batch images, summed
  double train_seconds = 0;  // in training steps
  double wall_seconds = 0;   // since the epoch began, evaluation and checkpoints included
  std::uint64_t peak_load_bytes = 0, footprint_bytes = 0;
};

struct Checkpoint {
  RunSettings settings;
  std::int64_t epoch = 0;           // the epoch to continue in
  std::int64_t batch_in_epoch = 0;  // batches of that epoch already trained
  std::int64_t iteration = 0;       // training iterations done
  EpochSoFar epoch_so_far;          // of those batch_in_epoch batches
  LossScalerState loss_scale;       // fp16's (checkpoints from before it: the initial state)
  // The kernels the device chose by timing (Device::kernel_choices), which
  // the resumed run adopts so that it computes the same bits; empty for
  // devices that time nothing and in checkpoints from before they were kept.
  std::vector<std::string> kernel_choices;
  std::vector<float> state;
};

// Throws CheckpointError naming the file when it cannot be written; the
// previous checkpoint is then still in place.
void save_checkpoint(const std::filesystem::path& file, const Checkpoint& c);
// Throws CheckpointError naming the file for a missing, truncated or corrupt checkpoint.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// What load_checkpoint does with the file's bytes (the fuzzers call it
// directly); `source` names them in the CheckpointError.
Checkpoint parse_checkpoint(std::span<const char> bytes, const std::string& source);

}  // namespace tidepool::app
