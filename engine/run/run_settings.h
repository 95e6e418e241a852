// Everything a training run is configured with, in one type: parsed once
// (the command line, app/cli.cpp; or a checkpoint being resumed), read by
// the session that trains it, the window that shows it and the run folder
// that records it. Its memory part is what may change between iterations.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/core/choices.h"
#include "engine/core/fusion.h"
#include "engine/schedule/memory_settings.h"
#include "engine/run/lr_schedule.h"

namespace tidepool {

enum class DeviceKind : std::uint8_t { cpu, cuda, sim };
inline constexpr Choice<DeviceKind> kDeviceKinds[] = {
    {DeviceKind::cpu, "cpu", "oneDNN on this machine's cores"},
    {DeviceKind::cuda, "cuda", "GPU 0 with cuDNN and cuBLAS; needs a build with the CUDA backend"},
    {DeviceKind::sim, "sim", "a GPU in virtual time from --profile; computes no numbers"},
};
constexpr std::span<const Choice<DeviceKind>> choices(DeviceKind) { return kDeviceKinds; }

inline constexpr std::int64_t kCheckpointByTime = -1;  // RunSettings::checkpoint_every

struct RunSettings {
  // What is trained, and how.
  std::string model = "resnet20";
  Fusion fuse = Fusion::none;  // the model as built, or with layers fused (engine/core/fusion.h)
  std::string dataset = "generated";
  std::string data_dir;  // default: data/generated for the generated dataset
  std::int64_t batch_size = 128;
  std::int64_t epochs = 0;      // 0 with iterations == 0 means 1 epoch
  std::int64_t iterations = 0;  // 0: run whole epochs
  float lr = 0.1f;
  LrSchedule lr_schedule = LrSchedule::cosine;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  std::uint64_t seed = 1;
  DeviceKind device = DeviceKind::cpu;
  // The performance profile (engine/perf/spec_profiles.h: a file, or a GPU
  // specification's name) the sim device runs on.
  std::string profile;
  int compress_threads = 0;  // host threads per compressed tensor; 0: a quarter of the cores
  MemorySettings memory;     // what may change between iterations

  // Where a --batch run writes, and how much of it.
  std::string out;     // run folder; default runs/<model>-<dataset>-<time>
  std::string resume;  // a run folder holding checkpoint.bin
  // --force: `out` may hold a run, which the new run replaces (its files
  // are removed once every check has passed). Never saved with the run.
  bool force = false;
  std::int64_t trace_iterations = 5;  // iterations written to trace.json, memory_load.csv and events.bin
  // Iterations trained before the recorded ones start (Nsight Systems'
  // delay): 50 records iterations 51 on, counting from 1.
  std::int64_t trace_from = 0;
  // Stop this invocation after so many iterations (checkpointed; continue
  // with --resume) without changing the planned run or its schedule. 0 = off.
  std::int64_t stop_after = 0;
  // Checkpoints within an epoch, besides those at its end and at a stop:
  // every N iterations of the run (counted from its start, so a resumed run
  // checkpoints where an uninterrupted one would); 0 = none; the default,
  // kCheckpointByTime, the first iteration that ends 5 minutes or more after
  // the last checkpoint (app/batch_run.h). Like stop_after, it belongs to
  // one invocation: checkpoints do not keep it.
  std::int64_t checkpoint_every = kCheckpointByTime;
  bool progress = true;
};

// As checkpoints keep them (the run folder's settings): names from the
// tables, the budget as a size. Reads what earlier versions wrote too.
// Reading throws nlohmann::json's exceptions for a missing key or a wrong
// type, and std::invalid_argument for an unknown name, a number that is
// not an integer of the field's range, or a swap weight below 0.
nlohmann::json to_json(const RunSettings& s);
RunSettings run_settings_from_json(const nlohmann::json& j);

// j.at(key) as an integer that fits 64 signed bits, or std::invalid_argument
// naming the key (for 1.5, 1e30, 2^63): for the readers of files a user
// hands us, where nlohmann's get<>() would convert a float out of range
// with undefined behaviour.
std::int64_t json_int64(const nlohmann::json& j, const char* key);

}  // namespace tidepool
