// AccUDNN's Table 2 and Fig. 11 in shape (issue 18): data-parallel
// throughput and scaling efficiency of ResNet-101 and ResNet-152 on 1, 2, 4
// and 8 simulated M40s over 10 Gbit/s Ethernet, at the per-GPU minibatches
// of the paper's Table 2 (Caffe's largest, 20 and 13; AccUDNN's
// efficiency-optimal, 74 and 54), beside the paper's figures.
//
// Each cell is rank 0 of N on the sim device (engine/device/sim/): a
// SimDevice with the GPU profile and the network, SimulatedRanks(N), a
// Trainer with memory.ranks = N, `--iterations` iterations (the last one
// timed; simulated time is deterministic). Two ways of all-reducing the
// gradients:
//  - overlapped: in `--bucket-mb` buckets (PyTorch DDP's 25 MB) as backward
//    completes them, on the comm stream, under the rest of backward;
//  - one bucket: all gradients in one all-reduce once backward is done,
//    nothing to overlap with — closer to the paper's parameter server,
//    which synchronised after each iteration "without any communication
//    optimization" (§6.3 D).
// images/s is the cluster's: N × batch / iteration. Scaling efficiency is
// images/s over N times one rank's at the same per-GPU batch. "not hidden"
// is what N ranks add to one rank's iteration.
//
//   build/bench/accudnn_scaling [--profile m40] [--gbit 10] [--latency-us 20] [--bucket-mb 25]
//                               [--mode base] [--budget-gib 0] [--iterations 2] [model:batch ...]
//
// (default rows: resnet101:20 resnet101:74 resnet152:13 resnet152:54, at
// ImageNet shapes). The command line does not say `tidepool --batch
// --device sim` because the binary has no option for simulated ranks or a
// network. The README has the table this prints.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm/simulated_ranks.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/run/trainer.h"
#include "models/registry.h"

using namespace tidepool;

namespace {

constexpr int kRanks[] = {1, 2, 4, 8};

// The paper's measurements (docs/references.md): Table 2's Caffe on one M40 and its
// 8-GPU rows (Caffe_PS at Caffe's batch, AccUDNN_PS at AccUDNN's), and
// Table 1's AccUDNN on one M40 at its efficiency-optimal batch (Table 2 has
// no 1-GPU AccUDNN row). Fig. 11 plots ResNet-152 at other cluster sizes;
// its values are not in the text, so those cells say "-".
struct PaperCell {
  const char* model;
  std::int64_t batch;
  int ranks;
  double images_per_s;
  const char* where;
};
constexpr PaperCell kPaper[] = {
    {"resnet101", 20, 1, 30, "Table 2, Caffe"},       {"resnet101", 20, 8, 132, "Table 2, Caffe_PS"},
    {"resnet101", 74, 1, 34, "Table 1, AccUDNN"},     {"resnet101", 74, 8, 217, "Table 2, AccUDNN_PS"},
    {"resnet152", 13, 1, 19, "Table 2, Caffe"},       {"resnet152", 13, 8, 76, "Table 2, Caffe_PS"},
    {"resnet152", 54, 1, 24, "Table 1, AccUDNN"},     {"resnet152", 54, 8, 147, "Table 2, AccUDNN_PS"},
};

std::optional<double> paper(const std::string& model, std::int64_t batch, int ranks) {
  for (const PaperCell& c : kPaper)
    if (model == c.model && batch == c.batch && ranks == c.ranks) return c.images_per_s;
  return std::nullopt;
}

struct Options {
  std::string profile = "m40";
  SimNetwork network;
  std::size_t bucket_bytes = 25'000'000;  // PyTorch DDP's bucket_cap_mb
  MemorySettings memory;
  int iterations = 2;
};

// Rank 0's last iteration, µs.
double iteration_us(const Network& net, std::int64_t batch, int ranks, std::size_t bucket_bytes, const Options& o) {
  SimDevice device{PerfModel(resolve_profile(o.profile)), o.network};
  SimulatedRanks comm(ranks);
  MemorySettings memory = o.memory;
  memory.ranks = ranks;
  memory.bucket_bytes = bucket_bytes;
  Trainer trainer(device, net, {.batch = batch, .memory = memory, .comm = &comm});
  // The sim device reads no values: zeros do.
  const std::vector<float> images(static_cast<std::size_t>(batch * net.image_shape().numel()), 0.0f);
  const std::vector<std::int32_t> labels(static_cast<std::size_t>(batch), 0);
  double us = 0;
  for (int i = 0; i < o.iterations; ++i) {
    const IterationResult r = trainer.train_step(images.data(), labels.data());
    us = r.end_us - r.start_us;
  }
  return us;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<std::pair<std::string, std::int64_t>> rows;
  for (int i = 1; i < argc; ++i) {
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--profile")) o.profile = value();
    else if (!std::strcmp(argv[i], "--gbit")) o.network.gbit_per_s = std::atof(value());
    else if (!std::strcmp(argv[i], "--latency-us")) o.network.latency_us = std::atof(value());
    else if (!std::strcmp(argv[i], "--bucket-mb")) o.bucket_bytes = static_cast<std::size_t>(std::atof(value()) * 1e6);
    else if (!std::strcmp(argv[i], "--mode")) o.memory.mode = parse_choice<OffloadMode>(value(), "offload mode");
    else if (!std::strcmp(argv[i], "--budget-gib"))
      o.memory.budget_bytes = static_cast<std::size_t>(std::atof(value()) * (1ull << 30));
    else if (!std::strcmp(argv[i], "--iterations")) o.iterations = std::max(1, std::atoi(value()));
    else {
      const char* colon = std::strchr(argv[i], ':');
      if (!colon) {
        std::fprintf(stderr, "a row is model:batch, such as resnet101:74, not %s\n", argv[i]);
        return 2;
      }
      rows.emplace_back(std::string(argv[i], static_cast<std::size_t>(colon - argv[i])), std::atoll(colon + 1));
    }
  }
  if (rows.empty()) rows = {{"resnet101", 20}, {"resnet101", 74}, {"resnet152", 13}, {"resnet152", 54}};

  std::printf("sim device, profile %s, ring all-reduce over %g Gbit/s with %g us per step, ImageNet shapes, mode %s%s;\n"
              "overlapped: %.0f MB buckets under backward; one bucket: after backward. In brackets: scaling efficiency.\n",
              o.profile.c_str(), o.network.gbit_per_s, o.network.latency_us, to_string(o.memory.mode),
              o.memory.budget_bytes ? (", budget " + std::to_string(o.memory.budget_bytes >> 30) + " GiB").c_str() : "",
              static_cast<double>(o.bucket_bytes) / 1e6);
  std::printf("| model | per-GPU batch | GPUs | images/s, overlapped | not hidden ms | images/s, one bucket | not hidden ms | "
              "paper images/s |\n|---|---|---|---|---|---|---|---|\n");
  for (const auto& [model, batch] : rows) {
    const Network net = models::make_model(model, models::InputKind::imagenet, 1000);
    double one_rank_us = 0;
    std::optional<double> paper_one;
    for (int n : kRanks) {
      const double overlapped = iteration_us(net, batch, n, o.bucket_bytes, o);
      const double single = n == 1 ? overlapped : iteration_us(net, batch, n, std::numeric_limits<std::size_t>::max(), o);
      if (n == 1) one_rank_us = overlapped;
      auto ips = [&](double us) { return static_cast<double>(n * batch) / (us / 1e6); };
      auto efficiency = [&](double us) { return one_rank_us / us; };  // (n·b/us) / (n · b/one_rank_us)
      const std::optional<double> p = paper(model, batch, n);
      if (n == 1) paper_one = p;
      std::string paper_text = "-";
      if (p) {
        char buf[64];
        if (n > 1 && paper_one) std::snprintf(buf, sizeof buf, "%.0f (%.0f %%)", *p, 100 * *p / (n * *paper_one));
        else std::snprintf(buf, sizeof buf, "%.0f", *p);
        paper_text = buf;
      }
      std::printf("| %s | %lld | %d | %.1f (%.0f %%) | %.0f | %.1f (%.0f %%) | %.0f | %s |\n", model.c_str(),
                  static_cast<long long>(batch), n, ips(overlapped), 100 * efficiency(overlapped),
                  (overlapped - one_rank_us) / 1e3, ips(single), 100 * efficiency(single), (single - one_rank_us) / 1e3,
                  paper_text.c_str());
      std::fflush(stdout);
    }
  }
}
