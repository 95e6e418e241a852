#include "engine/tune/profiler.h"

#include <algorithm>
#include <map>
#include <random>
#include <stdexcept>

#include "engine/core/bytes_text.h"
#include "engine/perf/fit.h"
#include "engine/perf/step_work.h"
#include "engine/run/trainer.h"

namespace tidepool {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool is_compute(SpanKind k) {
  return k == SpanKind::forward || k == SpanKind::backward || k == SpanKind::accumulate || k == SpanKind::update ||
         k == SpanKind::recompute;
}

}  // namespace

void add_samples(Profile& profile, const Network& network, const Schedule& schedule,
                 std::span<const SpanEvent> spans, const KernelQueries& queries) {
  std::map<int, std::vector<double>> by_step;
  for (const SpanEvent& e : spans) {
    if (is_compute(e.kind) && e.stream == Stream::compute) by_step[e.step].push_back(e.end_us - e.start_us);
    if ((e.kind == SpanKind::offload || e.kind == SpanKind::prefetch) && e.bytes > 0)
      profile.copy_samples.push_back({e.kind == SpanKind::offload, e.bytes, e.end_us - e.start_us});
  }
  WorkCounter counter(queries);
  for (const auto& [step, times] : by_step) {
    if (step < 0 || step >= static_cast<int>(schedule.steps.size()))
      throw std::invalid_argument("add_samples: a span of step " + std::to_string(step) + ", which the schedule does not have");
    const Work w = step_work(network, schedule, step, counter);
    if (w.kernels == 0) continue;
    const Step& st = schedule.steps[static_cast<std::size_t>(step)];
    std::string layer = st.node >= 0 ? network.nodes()[static_cast<std::size_t>(st.node)].layer->name() : "sgd";
    // A recompute is its layer's forward work again: one more sample of it.
    layer += st.kind == StepKind::forward || st.kind == StepKind::recompute ? " fwd" : st.kind == StepKind::backward ? " bwd" : st.kind == StepKind::accumulate ? " acc" : "";
    profile.compute_samples.push_back({w.work_class, std::move(layer), schedule.batch, w.flops, w.kernels, median(times)});
  }
}

std::vector<std::int64_t> profiling_batches(std::int64_t largest) {
  std::vector<std::int64_t> b;
  for (double f : {1.0 / 8, 1.0 / 4, 1.0 / 2, 2.0 / 3, 1.0}) {
    const auto k = static_cast<std::int64_t>(f * static_cast<double>(largest));
    if (k > 0 && std::find(b.begin(), b.end(), k) == b.end()) b.push_back(k);
  }
  return b;
}

Profile measure_profile(const std::function<std::unique_ptr<Device>()>& make_device, const Network& network,
                        const ProfilingOptions& options, std::string name) {
  if (options.batches.empty()) throw std::invalid_argument("measure_profile: no batch sizes");
  if (options.iterations < 1) throw std::invalid_argument("measure_profile: at least one timed iteration per batch");
  Profile profile;
  profile.name = std::move(name);
  profile.source = "measured";
  for (std::int64_t batch : options.batches) {
    std::unique_ptr<Device> device = make_device();
    if (!profile.memory_bytes) profile.memory_bytes = device->caps().memory_bytes;
    Trainer trainer(*device, network, {.batch = batch, .memory = options.memory, .seed = options.seed});
    const Schedule& s = trainer.train_schedule();
    // Timing does not depend on the values: standard normal pixels, label 0.
    std::vector<float> images(static_cast<std::size_t>(s.tensors[static_cast<std::size_t>(s.data)].info.shape.numel()));
    std::mt19937_64 rng(options.seed);
    std::normal_distribution<float> normal;
    for (float& v : images) v = normal(rng);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch), 0);
    for (int i = 0; i < options.warmup; ++i) trainer.train_step(images.data(), labels.data());
    SpanRecorder recorder;
    trainer.set_sink(&recorder);
    for (int i = 0; i < options.iterations; ++i) trainer.train_step(images.data(), labels.data());
    trainer.set_sink(nullptr);
    add_samples(profile, network, s, recorder.spans(), device->kernels());
    if (options.progress)
      options.progress("profiled batch " + std::to_string(batch) + ": " + std::to_string(recorder.spans().size()) +
                       " spans over " + std::to_string(options.iterations) + " iterations");
  }
  fit_profile(profile);
  return profile;
}

}  // namespace tidepool
