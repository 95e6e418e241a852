// N simulated GPUs on a modelled network: rank 0's iteration on the sim
// device with SimulatedRanks. Simulated times are deterministic, so the
// tests assert on them exactly: what an all-reduce takes, what of it backward
// hides, and how the bucket size decides that.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "engine/comm/simulated_ranks.h"
#include "engine/device/sim/sim_device.h"
#include "engine/perf/spec_profiles.h"
#include "engine/perf/step_work.h"
#include "engine/run/trainer.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/recorder.h"

namespace tidepool {
namespace {

constexpr std::int64_t kBatch = 32;
constexpr int kRanks = 8;

double duration(const SpanEvent& e) { return e.end_us - e.start_us; }

// The second training iteration of resnet20 on an M40 (the first places
// what later iterations find in place), as rank 0 of `ranks`.
struct SimRun {
  double iteration_us = 0;
  std::vector<SpanEvent> spans;  // that iteration's
  double total(SpanKind kind) const {
    double sum = 0;
    for (const SpanEvent& e : spans)
      if (e.kind == kind) sum += duration(e);
    return sum;
  }
  std::vector<SpanEvent> of(SpanKind kind) const {
    std::vector<SpanEvent> out;
    std::copy_if(spans.begin(), spans.end(), std::back_inserter(out), [&](const SpanEvent& e) { return e.kind == kind; });
    return out;
  }
  // The compute stream's waits for the buckets' sums (not for copies).
  std::vector<SpanEvent> bucket_waits() const {
    std::vector<SpanEvent> out;
    for (const SpanEvent& e : of(SpanKind::wait))
      if (e.tensor.rfind("bucket", 0) == 0) out.push_back(e);
    return out;
  }
};

SimRun run(int ranks, std::size_t bucket_bytes, SimNetwork network, bool sync_bn = false) {
  static const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  SimDevice device{PerfModel(*specification_profile("m40")), network};
  SimulatedRanks comm(ranks);
  testing::Recorder events;
  Trainer trainer(device, net,
                  {.batch = kBatch, .memory = {.ranks = ranks, .bucket_bytes = bucket_bytes, .sync_bn = sync_bn}, .comm = &comm},
                  &events);
  SimRun out;
  for (unsigned i = 0; i < 2; ++i) {
    const testing::Batch b = testing::random_batch(kBatch, i, {3 * 32 * 32, 10});
    const IterationResult r = trainer.train_step(b.images.data(), b.labels.data());
    out.iteration_us = r.end_us - r.start_us;
  }
  const std::int64_t last = events.spans.back().iteration;
  std::copy_if(events.spans.begin(), events.spans.end(), std::back_inserter(out.spans),
               [&](const SpanEvent& e) { return e.iteration == last; });
  return out;
}

// The compute stream's time after backward that it spends waiting for the
// all-reduces, replayed from the backward timeline and the network's
// formula alone: the comm stream takes each bucket once it is packed and
// the one before is done; after backward (at the first wait for a bucket)
// the compute stream unpacks each bucket once its sum is back.
double exposed_by_replay(const SimRun& r, const SimNetwork& network) {
  const std::vector<SpanEvent> packs = r.of(SpanKind::pack), unpacks = r.of(SpanKind::unpack);
  EXPECT_EQ(packs.size(), unpacks.size());
  double comm = 0;
  std::vector<double> summed;
  for (const SpanEvent& p : packs) {
    comm = std::max(comm, p.end_us) + ring_all_reduce_us(p.bytes, kRanks, network);
    summed.push_back(comm);
  }
  const double after_backward = r.bucket_waits().front().start_us;
  double compute = after_backward, busy = 0;
  for (std::size_t i = 0; i < unpacks.size(); ++i) {
    compute = std::max(compute, summed[i]) + duration(unpacks[i]);
    busy += duration(unpacks[i]);
  }
  return compute - after_backward - busy;
}

TEST(SimDataParallel, EachBucketsAllReduceTakesTheRingFormulaOnTheCommStream) {
  const SimNetwork network{.gbit_per_s = 10, .latency_us = 20};
  const SimRun r = run(kRanks, 64 << 10, network);
  const std::vector<SpanEvent> reduces = r.of(SpanKind::all_reduce);
  ASSERT_GT(reduces.size(), 3u);
  std::size_t bytes = 0;
  for (const SpanEvent& e : reduces) {
    EXPECT_EQ(e.stream, Stream::comm);
    EXPECT_NEAR(duration(e), ring_all_reduce_us(e.bytes, kRanks, network), 1e-6) << e.tensor;  // clocks in µs: the rounding of a subtraction
    bytes += e.bytes;
  }
  // The buckets hold resnet20's 0.27 M parameter gradients.
  EXPECT_GT(bytes, std::size_t{1'000'000});
  EXPECT_LT(bytes, std::size_t{1'200'000});
}

// The packs and unpacks are compute-stream kernels the model times as it
// times layers (step_work counts the executor's calls).
TEST(SimDataParallel, PacksAndUnpacksLastWhatTheModelSaysForTheirSteps) {
  static const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  SimDevice device{PerfModel(*specification_profile("m40"))};
  SimulatedRanks comm(kRanks);
  testing::Recorder events;
  Trainer trainer(device, net, {.batch = kBatch, .memory = {.ranks = kRanks, .bucket_bytes = 64 << 10}, .comm = &comm},
                  &events);
  const testing::Batch b = testing::random_batch(kBatch, 1, {3 * 32 * 32, 10});
  trainer.train_step(b.images.data(), b.labels.data());
  WorkCounter counter(device.kernels());
  int checked = 0;
  for (const SpanEvent& e : events.spans)
    if (e.kind == SpanKind::pack || e.kind == SpanKind::unpack) {
      const double us = device.model().compute_us(step_work(net, trainer.train_schedule(), e.step, counter));
      EXPECT_GT(us, 0);
      EXPECT_NEAR(duration(e), us, 1e-6 * us) << e.tensor;
      ++checked;
    }
  EXPECT_EQ(checked, 2 * static_cast<int>(trainer.train_schedule().buckets.size()));
}

// Eight ranks take one rank's iteration, plus packing and unpacking the
// buckets, plus the part of the all-reduces that backward does not hide.
TEST(SimDataParallel, EightRanksAddWhatBackwardDoesNotHide) {
  const SimNetwork network{.gbit_per_s = 10, .latency_us = 20};
  const SimRun one = run(1, 64 << 10, network), eight = run(kRanks, 64 << 10, network);
  EXPECT_TRUE(one.of(SpanKind::all_reduce).empty());
  const double exposed = exposed_by_replay(eight, network);
  EXPECT_NEAR(eight.iteration_us - one.iteration_us,
              eight.total(SpanKind::pack) + eight.total(SpanKind::unpack) + exposed, 1e-6 * one.iteration_us);
  // Some of it is hidden, some not: 10 GbE is slow for an M40 on resnet20.
  EXPECT_GT(exposed, 0);
  EXPECT_LT(exposed, eight.total(SpanKind::all_reduce));
  double waited = 0;
  for (const SpanEvent& e : eight.bucket_waits()) waited += duration(e);
  EXPECT_NEAR(waited, exposed, 1e-6 * one.iteration_us) << "the compute stream's waits for the buckets are it";
}

// A network whose whole all-reduce takes half of backward: in many small
// buckets it runs under backward and only the last bucket's shows; in one
// bucket it starts when backward ends and all of it shows.
TEST(SimDataParallel, SmallBucketsHideTheAllReduceUnderBackwardAndOneBucketCannot) {
  const SimRun one = run(1, 64 << 10, {});
  std::size_t gradient_bytes = 0;
  for (const SpanEvent& e : run(kRanks, 64 << 10, {}).of(SpanKind::all_reduce)) gradient_bytes += e.bytes;
  const double backward_us = one.total(SpanKind::backward);
  // 2 (N-1)/N · bytes / bandwidth = backward / 2, no latency.
  const double bytes_per_us = 2.0 * (kRanks - 1) / kRanks * static_cast<double>(gradient_bytes) / (backward_us / 2);
  const SimNetwork slow{.gbit_per_s = bytes_per_us * 8e6 / 1e9, .latency_us = 0};
  const double whole_us = ring_all_reduce_us(gradient_bytes, kRanks, slow);
  ASSERT_NEAR(whole_us, backward_us / 2, 1e-6 * backward_us);

  const SimRun huge = run(kRanks, std::numeric_limits<std::size_t>::max(), slow);
  ASSERT_EQ(huge.of(SpanKind::all_reduce).size(), 1u);
  const double huge_exposed = huge.iteration_us - one.iteration_us - huge.total(SpanKind::pack) - huge.total(SpanKind::unpack);
  EXPECT_NEAR(huge_exposed, whole_us, 1e-6 * whole_us) << "one bucket: nothing to overlap with";

  const SimRun tiny = run(kRanks, 16 << 10, slow);
  const std::vector<SpanEvent> reduces = tiny.of(SpanKind::all_reduce);
  ASSERT_GT(reduces.size(), 10u);
  const double tiny_exposed = tiny.iteration_us - one.iteration_us - tiny.total(SpanKind::pack) - tiny.total(SpanKind::unpack);
  EXPECT_NEAR(tiny_exposed, exposed_by_replay(tiny, slow), 1e-6 * whole_us);
  EXPECT_NEAR(tiny.total(SpanKind::all_reduce), whole_us, 1e-6 * whole_us) << "the same bytes, cut in pieces";
  EXPECT_LE(tiny_exposed, duration(reduces.back()) + 1e-6 * whole_us) << "at most the last bucket shows";
  EXPECT_LT(tiny_exposed, 0.1 * huge_exposed);
  EXPECT_LT(tiny.iteration_us, huge.iteration_us);
}

// --sync-bn: each batch norm's sums (2c + 1 doubles) are an all-reduce of
// the comm stream in forward and in backward, timed by the ring formula,
// and the compute stream waits for each before the rest of its pass. In
// forward the comm stream has nothing else queued, so the iteration is at
// least those all-reduces longer.
TEST(SimDataParallel, SyncBnAllReducesEachBatchNormsSumsAndComputeWaitsForThem) {
  const SimNetwork network{.gbit_per_s = 10, .latency_us = 20};
  const SimRun each = run(kRanks, 64 << 10, network), synced = run(kRanks, 64 << 10, network, true);
  double forward_us = 0;
  int forward = 0, backward = 0;
  for (const SpanEvent& e : synced.of(SpanKind::all_reduce)) {
    if (e.tensor.find("sums") == std::string::npos) continue;
    EXPECT_EQ(e.stream, Stream::comm);
    EXPECT_NEAR(duration(e), ring_all_reduce_us(e.bytes, kRanks, network), 1e-6) << e.tensor;
    EXPECT_EQ((e.bytes / sizeof(double)) % 2, 1u) << e.tensor << ": two sums per channel and the count";
    const bool grad = e.tensor.find("grad_sums") != std::string::npos;
    backward += grad;
    forward += !grad;
    if (!grad) forward_us += duration(e);
  }
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const auto batch_norms = std::count_if(net.nodes().begin(), net.nodes().end(),
                                         [](const Node& n) { return n.layer->kind() == "batchnorm"; });
  EXPECT_GT(batch_norms, 19);  // the stem's, two per block, and the downsampling shortcuts'
  EXPECT_EQ(forward, batch_norms);
  EXPECT_EQ(backward, batch_norms);
  EXPECT_GT(synced.iteration_us, each.iteration_us + forward_us);
  EXPECT_TRUE(std::none_of(each.spans.begin(), each.spans.end(),
                           [](const SpanEvent& e) { return e.tensor.find("sums") != std::string::npos; }));
}

}  // namespace
}  // namespace tidepool
