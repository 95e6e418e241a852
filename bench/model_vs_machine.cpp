// The performance model against the machine (issue 16's first must-show):
// calibrated on the cpu device, how well does the sim device predict the cpu
// device's iteration time and each layer's span?
//
// For each model, in one process: measure a profile on the cpu device at
// 1/8, 1/4, 1/2, 2/3 and 1 of the batch (AccUDNN's five sizes, everything
// offloaded), then time `iterations` iterations at the batch on the cpu
// device and one on the sim device running that profile, in the same mode,
// and compare: the iteration (median over the cpu's), and every compute
// step's span (median over the cpu's iterations) — the median over steps of
// |sim − cpu| / cpu, and the same weighted by time.
//
//   OMP_NUM_THREADS=2 build/bench/model_vs_machine [--batch 128] [--iterations 3] [--mode base] [models...]
//
// (default models: resnet20 resnet18 vgg16 at CIFAR shapes). Prints a table;
// the README has the one from this machine.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/device/cpu/cpu_device.h"
#include "engine/device/cpu/cpu_queries.h"
#include "engine/device/sim/sim_device.h"
#include "engine/tune/profiler.h"
#include "engine/run/trainer.h"
#include "models/registry.h"

using namespace tidepool;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool is_compute(SpanKind k) {
  return k == SpanKind::forward || k == SpanKind::backward || k == SpanKind::accumulate || k == SpanKind::update ||
         k == SpanKind::recompute;
}

struct Timed {
  double iteration_us = 0;
  std::map<int, double> step_us;  // median per compute step
};

Timed time_on(Device& device, const Network& net, std::int64_t batch, const MemorySettings& memory, int iterations) {
  Trainer trainer(device, net, {.batch = batch, .memory = memory});
  const Schedule& s = trainer.train_schedule();
  std::vector<float> images(static_cast<std::size_t>(s.tensors[static_cast<std::size_t>(s.data)].info.shape.numel()));
  std::mt19937_64 rng(1);
  std::normal_distribution<float> normal;
  for (float& v : images) v = normal(rng);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch), 0);
  trainer.train_step(images.data(), labels.data());  // warm-up: oneDNN builds its primitives
  SpanRecorder recorder;
  trainer.set_sink(&recorder);
  std::vector<double> iters;
  for (int i = 0; i < iterations; ++i) {
    const IterationResult r = trainer.train_step(images.data(), labels.data());
    iters.push_back(r.end_us - r.start_us);
  }
  std::map<int, std::vector<double>> per_step;
  for (const SpanEvent& e : recorder.spans())
    if (is_compute(e.kind)) per_step[e.step].push_back(e.end_us - e.start_us);
  Timed t;
  t.iteration_us = median(iters);
  for (auto& [step, v] : per_step) t.step_us[step] = median(v);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t batch = 128;
  int iterations = 3;
  MemorySettings memory;
  std::vector<std::string> names;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--iterations") && i + 1 < argc) iterations = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) memory.mode = parse_choice<OffloadMode>(argv[++i], "offload mode");
    else names.emplace_back(argv[i]);
  }
  if (names.empty()) names = {"resnet20", "resnet18", "vgg16"};
  std::printf("batch %lld, mode %s, cpu device vs the sim device on a profile measured just before\n",
              static_cast<long long>(batch), to_string(memory.mode));
  std::printf("%-10s %12s %12s %9s %10s %12s %8s\n", "model", "cpu ms/iter", "sim ms/iter", "iter err",
              "layer err", "weighted err", "layers");
  for (const std::string& name : names) {
    const Network net = models::make_model(name, models::InputKind::cifar, 10);
    ProfilingOptions options;
    options.batches = profiling_batches(batch);
    options.iterations = iterations;
    const Profile profile = measure_profile([] { return std::make_unique<CpuDevice>(); }, net, options, "cpu: " + name);
    CpuDevice cpu;
    const Timed real = time_on(cpu, net, batch, memory, iterations);
    SimDevice sim{PerfModel(profile), {}, make_cpu_queries()};  // the cpu device's answers, as its profile
    const Timed predicted = time_on(sim, net, batch, memory, 1);
    std::vector<double> errors;
    double weighted = 0, total = 0;
    for (const auto& [step, us] : real.step_us) {
      const double p = predicted.step_us.at(step);
      errors.push_back(std::abs(p - us) / us);
      weighted += std::abs(p - us);
      total += us;
    }
    std::printf("%-10s %12.1f %12.1f %8.1f%% %9.1f%% %11.1f%% %8zu\n", name.c_str(), real.iteration_us / 1e3,
                predicted.iteration_us / 1e3, 100 * std::abs(predicted.iteration_us - real.iteration_us) / real.iteration_us,
                100 * median(errors), 100 * weighted / total, errors.size());
    std::fflush(stdout);
  }
}
