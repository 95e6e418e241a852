#include "app/commands/profile_command.h"

#include <iostream>
#include <memory>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "app/device_factory.h"
#include "app/model_shapes.h"
#include "engine/tune/profiler.h"
#include "engine/perf/spec_profiles.h"
#include "engine/plan/planner.h"

#include "app/options/run_options.h"
#include "app/options/values.h"

namespace tidepool::app {

namespace {

// The device's answers, with every convolution workspace asked kept.
class WorkspaceRecorder final : public KernelQueries {
 public:
  explicit WorkspaceRecorder(const KernelQueries& device) : device_(device) {}
  bool takes_16bit(DType type) const override { return device_.takes_16bit(type); }
  std::string refuses_16bit(DType type) const override { return device_.refuses_16bit(type); }
  std::int64_t channel_block() const override { return device_.channel_block(); }
  std::size_t conv_workspace_bytes(const ConvShape& s, ConvScheme scheme, ConvPass pass) const override {
    const std::size_t bytes = device_.conv_workspace_bytes(s, scheme, pass);
    const MeasuredWorkspace m{s, scheme, pass, bytes - conv_weights_copy_bytes(s)};
    if (std::find(recorded.begin(), recorded.end(), m) == recorded.end()) recorded.push_back(m);
    return bytes;
  }
  std::size_t batchnorm_relu_mask_bytes(const BatchNormShape& s) const override {
    return device_.batchnorm_relu_mask_bytes(s);
  }
  std::size_t pool_saved_bytes(const PoolShape& s) const override { return device_.pool_saved_bytes(s); }

  mutable std::vector<MeasuredWorkspace> recorded;

 private:
  const KernelQueries& device_;
};

}  // namespace

std::vector<MeasuredWorkspace> record_workspaces(const Network& net, const std::vector<std::int64_t>& batches,
                                                 const KernelQueries& device) {
  WorkspaceRecorder recorder(device);
  std::vector<Precision> precisions = {Precision::fp32};
  if (device.takes_16bit(DType::f16)) precisions.push_back(Precision::fp16);
  if (device.takes_16bit(DType::bf16)) precisions.push_back(Precision::bf16);
  for (std::int64_t batch : batches)
    for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p})
      for (Precision precision : precisions)
        for (Phase phase : {Phase::train, Phase::eval})
          plan_schedule(net, batch, PlanSettings{phase, MemorySettings{.scheme = scheme, .precision = precision}, {}},
                        recorder);
  return recorder.recorded;
}

void print_profile(const Profile& p, std::ostream& out) {
  out << p.name << " (" << p.source << ")\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-20s %12s %16s %6s %10s %8s\n", "class", "peak GFLOP/s", "saturation FLOPs",
                "slope", "launch us", "samples");
  out << line;
  for (const Choice<WorkClass>& c : kWorkClasses)
    if (const auto& f = p.fit(c.value)) {
      std::snprintf(line, sizeof line, "%-20s %12.2f %16.4g %6.2f %10.2f %8d\n", c.name, f->peak_gflops,
                    f->saturation_flops, f->slope, f->launch_us, f->samples);
      out << line;
    }
  std::snprintf(line, sizeof line, "link to host:   %.3f GB/s, %.1f us latency (%d samples)\n", p.to_host.gbps,
                p.to_host.latency_us, p.to_host.samples);
  out << line;
  std::snprintf(line, sizeof line, "link to device: %.3f GB/s, %.1f us latency (%d samples)\n", p.to_device.gbps,
                p.to_device.latency_us, p.to_device.samples);
  out << line;
}

Profile measure_device(const ProfileRequest& q, const Network& net) {
  if (q.run.device == DeviceKind::sim)
    throw std::invalid_argument("profile measures a real device (cpu or cuda); the sim device runs on a profile");
  ProfilingOptions options;
  options.batches = profiling_batches(q.run.batch_size);
  options.iterations = q.iterations;
  options.memory.scheme = q.run.memory.scheme;
  if (q.progress) options.progress = [](const std::string& line) { std::cerr << "tidepool: " << line << '\n'; };
  auto make = [&] { return make_device(q.run.device, q.run.memory.link_gbps); };
  std::string name = make()->caps().name + " (measured on " + q.run.model + ", " + q.run.dataset + ")";
  Profile p = measure_profile(make, net, options, std::move(name));
  if (q.run.device == DeviceKind::cuda) {
    // The GPU's own answers go with its times, so that plans from this
    // profile (plan --profile, the sim device) place what cuDNN chose here.
    const std::unique_ptr<Device> device = make();
    const Kernels& k = device->kernels();
    p.kernels = ProfiledKernels::cuda;
    p.gpu = {device->caps().name, k.takes_16bit(DType::f16), k.takes_16bit(DType::bf16),
             record_workspaces(net, options.batches, k)};
  }
  std::string batches;
  for (auto b : options.batches) batches += (batches.empty() ? "" : ",") + std::to_string(b);
  p.notes = "tidepool profile --model " + q.run.model + " --dataset " + q.run.dataset + " --batch-size " +
            std::to_string(q.run.batch_size) + " --device " + to_string(q.run.device) + " --algo " + to_string(q.run.memory.scheme) +
            (q.run.memory.link_gbps ? " --link-gbps " + std::to_string(q.run.memory.link_gbps) : "") + ": batches " + batches + ", " +
            std::to_string(q.iterations) + " timed iterations each (medians), everything offloaded";
  return p;
}

int profile_command(const ProfileRequest& q, std::ostream& out) {
  if (q.out.empty()) throw std::invalid_argument("tidepool profile needs -o FILE: where to write the profile");
  Profile p;
  if (!q.spec.empty()) {
    auto spec = specification_profile(q.spec);
    if (!spec) throw std::invalid_argument("unknown GPU specification '" + q.spec + "' (valid: " + gpu_spec_names() + ")");
    p = *spec;
  } else {
    p = measure_device(q, model_for_dataset(q.run.model, q.run.dataset, q.run.fuse, q.run.memory.sync_bn));
  }
  save_profile(p, q.out);
  print_profile(p, out);
  out << "wrote " << q.out << '\n';
  return 0;
}

Command add_profile_command(CLI::App& cli) {
  auto q = std::make_shared<ProfileRequest>();
  auto* cmd = cli.add_subcommand(
      "profile", "measure a device's performance profile (per-layer times at five batch sizes, fitted), or derive "
                 "one from a GPU specification, for --device sim and the AccUDNN planner");
  RunOptions options(*cmd, q->run);
  options.network();
  options.device();
  options.batch("the largest batch profiled (also 1/8, 1/4, 1/2 and 2/3 of it)");
  options.algo("conv algorithm scheme to measure (as the runs it drives)");
  cmd->add_option("--iterations", q->iterations, "timed iterations per batch size (the median is kept)")
      ->capture_default_str()
      ->transform(number(1, 1000));
  cmd->add_option("--spec", q->spec, "derive the profile from a GPU specification instead: " + gpu_spec_names());
  cmd->add_option("-o,--out", q->out, "the profile JSON to write")->required();
  return {cmd, [q, cmd](bool quiet) {
            if (cmd->count("--profile"))
              throw std::invalid_argument("profile measures a device (or derives from --spec) and writes -o FILE; "
                                          "--profile is what a run or plan reads: leave it out");
            q->progress = !quiet;
            return profile_command(*q, std::cout);
          }};
}

}  // namespace tidepool::app
