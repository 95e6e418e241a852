// A few training steps on random batches, and what they end with: the tests
// that compare settings (offload modes, heuristics, transfers, devices)
// train each side the same way, so the numbers can only differ by the
// settings.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/network.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"

namespace tidepool::testing {

struct TrainingOutcome {
  std::uint64_t checksum = 0;     // Trainer::param_checksum() after the last step
  std::vector<float> parameters;  // ... and the parameters themselves
  std::vector<float> losses;      // one per step
  std::size_t pinned_bytes = 0;   // what the training schedule pinned on the host
};

// `iterations` steps on random_batch(options.batch, 50 + i) for step i.
inline TrainingOutcome train_on(Device& device, const Network& net, const TrainerOptions& options, int iterations) {
  Trainer trainer(device, net, options);
  TrainingOutcome out;
  for (int i = 0; i < iterations; ++i) {
    const Batch b = random_batch(options.batch, 50 + static_cast<unsigned>(i));
    out.losses.push_back(trainer.train_step(b.images.data(), b.labels.data()).loss);
  }
  out.checksum = trainer.param_checksum();
  out.parameters = trainer.read_parameters();
  out.pinned_bytes = trainer.train_schedule().pinned_bytes;
  return out;
}

// The same on a fresh cpu device whose simulated link runs at `link_gbps`
// (0: as fast as memcpy).
inline TrainingOutcome train_on_cpu(const Network& net, const TrainerOptions& options, int iterations,
                                    double link_gbps = 0) {
  CpuDevice device({link_gbps});
  return train_on(device, net, options, iterations);
}

}  // namespace tidepool::testing
