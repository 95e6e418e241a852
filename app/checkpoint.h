// Checkpoints: the trainer's persistent state (parameters, batchnorm
// statistics, momenta) plus where the run was and how it was configured.
//
// File layout (little-endian):
//   8 bytes   magic "TIDEPCK1"
//   8 bytes   header length H
//   H bytes   JSON header: run settings, epoch, iteration, batch_in_epoch, values
//   4*V bytes the state, V = header.values floats
//   8 bytes   FNV-1a of everything before it
// Written to a temporary file and renamed over the old one, so a crash
// mid-write never leaves a broken checkpoint behind.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <stdexcept>
#include <vector>

#include "engine/run/run_settings.h"

namespace tidepool::app {

class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Checkpoint {
  RunSettings settings;
  std::int64_t epoch = 0;           // the epoch to continue in
  std::int64_t batch_in_epoch = 0;  // batches of that epoch already trained
  std::int64_t iteration = 0;       // training iterations done
  std::vector<float> state;
};

void save_checkpoint(const std::filesystem::path& file, const Checkpoint& c);
// Throws CheckpointError naming the file for a missing, truncated or corrupt checkpoint.
Checkpoint load_checkpoint(const std::filesystem::path& file);
// What load_checkpoint does with the file's bytes (the fuzzers call it
// directly); `source` names them in the CheckpointError.
Checkpoint parse_checkpoint(std::span<const char> bytes, const std::string& source);

}  // namespace tidepool::app
