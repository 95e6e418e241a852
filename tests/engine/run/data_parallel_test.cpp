// Data-parallel training with ranks that are threads of this process
// (engine/comm/local_group.h): the gradient buckets of the plan, their
// all-reduces on the comm stream, and the invariant that every rank ends
// with the same parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "engine/comm/local_group.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/plan/memory_plan.h"
#include "engine/run/trainer.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::quadrant_batch;

constexpr std::int64_t kGlobalBatch = 16;

// Rank r's share of a global batch: images [r * n, (r + 1) * n).
Batch shard(const Batch& global, int rank, int ranks) {
  const std::size_t n = global.labels.size() / static_cast<std::size_t>(ranks);
  const std::size_t pixels = global.images.size() / global.labels.size();
  Batch b;
  b.images.assign(global.images.begin() + static_cast<std::ptrdiff_t>(rank * n * pixels),
                  global.images.begin() + static_cast<std::ptrdiff_t>((rank + 1) * n * pixels));
  b.labels.assign(global.labels.begin() + static_cast<std::ptrdiff_t>(rank * n),
                  global.labels.begin() + static_cast<std::ptrdiff_t>((rank + 1) * n));
  return b;
}

struct RankResult {
  std::vector<float> parameters;
  std::uint64_t checksum = 0;
  float loss = 0;
};

// `ranks` trainers, one thread each, `steps` SGD steps on their shards of
// the same global batches; what each ends with.
std::vector<RankResult> train_ranks(const Network& net, int ranks, MemorySettings memory, int steps,
                                    testing::Recorder* rank0_events = nullptr,
                                    const std::function<void(Trainer&)>& after = {}) {
  LocalGroup group(ranks);
  std::vector<RankResult> out(static_cast<std::size_t>(ranks));
  memory.ranks = ranks;
  auto rank = [&](int r) {
    CpuDevice device;
    Trainer trainer(device, net,
                    {.batch = kGlobalBatch / ranks, .memory = memory, .seed = 5, .comm = &group.rank(r)},
                    r == 0 ? rank0_events : nullptr);
    for (int i = 0; i < steps; ++i) {
      const Batch b = shard(quadrant_batch(kGlobalBatch, 100 + static_cast<unsigned>(i)), r, ranks);
      out[static_cast<std::size_t>(r)].loss = trainer.train_step(b.images.data(), b.labels.data()).loss;
    }
    if (after) after(trainer);
    out[static_cast<std::size_t>(r)].parameters = trainer.read_parameters();
    out[static_cast<std::size_t>(r)].checksum = trainer.param_checksum();
  };
  std::vector<std::jthread> others;
  for (int r = 1; r < ranks; ++r) others.emplace_back(rank, r);
  rank(0);
  others.clear();
  return out;
}

TEST(DataParallel, EveryRankEndsWithTheSameParametersBitForBit) {
  const Network net = testing::residual_net();
  // Batch norm's running statistics are each rank's until broadcast.
  const auto ranks = train_ranks(net, 2, {.bucket_bytes = 512}, 3, nullptr,
                                 [](Trainer& t) { t.broadcast_statistics(); });
  EXPECT_EQ(ranks[0].checksum, ranks[1].checksum);
  EXPECT_NE(ranks[0].loss, ranks[1].loss) << "the ranks trained on different shards";
}

// Without batch norm (whose statistics are per rank) and dropout, two
// ranks on halves of a batch take the step one rank takes on all of it:
// the average of the halves' mean gradients is the whole batch's mean
// gradient, up to the order of the sums.
TEST(DataParallel, TwoRanksOnHalvesTakeTheStepOfOneRankOnTheWholeBatch) {
  const Network net = testing::residual_net(false, false);
  const auto two = train_ranks(net, 2, {}, 2);
  const auto one = train_ranks(net, 1, {}, 2);
  ASSERT_EQ(two[0].parameters.size(), one[0].parameters.size());
  double worst = 0;
  for (std::size_t i = 0; i < one[0].parameters.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(two[0].parameters[i] - one[0].parameters[i])));
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(worst, 0.0) << "bit-identical would mean the ranks summed in one rank's order, which they do not";
}

// Offloading, the heuristic and the bucket size change where gradients
// live and how they are grouped, never what they sum to.
TEST(DataParallel, OffloadModesAndBucketSizesKeepTheBits) {
  const Network net = testing::residual_net();
  const auto base = train_ranks(net, 2, {.mode = OffloadMode::base}, 2);
  const auto all = train_ranks(net, 2, {.mode = OffloadMode::all, .heuristic = "first-fit", .bucket_bytes = 64}, 2);
  EXPECT_EQ(base[0].checksum, all[0].checksum);
  EXPECT_EQ(base[1].checksum, all[1].checksum);
}

TEST(DataParallel, BucketsHoldEveryParameterGradientOnceInTheOrderBackwardCompletesThem) {
  const Network net = testing::residual_net();
  CpuDevice device;
  const MemoryPlan one = plan_memory(net, 8, {}, device.kernels());
  const MemoryPlan two = plan_memory(net, 8, {.ranks = 2, .bucket_bytes = 512}, device.kernels());
  const Schedule& s = two.train;
  ASSERT_GT(s.buckets.size(), 1u);
  EXPECT_TRUE(one.train.buckets.empty());
  EXPECT_TRUE(two.eval.buckets.empty());
  std::vector<int> packed, trainable;
  for (const GradientBucket& b : s.buckets) packed.insert(packed.end(), b.grads.begin(), b.grads.end());
  for (const NodeTensors& nt : s.nodes)
    for (int g : nt.param_grads)
      if (g >= 0) trainable.push_back(g);
  std::vector<int> sorted = packed;
  std::sort(sorted.begin(), sorted.end());
  std::sort(trainable.begin(), trainable.end());
  EXPECT_EQ(sorted, trainable);
  // The last layer's gradients go first, and each bucket's all-reduce is
  // issued right behind the backward step that completed it: the first
  // before backward is over, on the comm stream.
  int last_trainable = -1;
  for (int i = 0; i < static_cast<int>(s.nodes.size()); ++i)
    for (int g : s.nodes[static_cast<std::size_t>(i)].param_grads)
      if (g >= 0) last_trainable = i;
  EXPECT_EQ(s.tensors[packed.front()].node, last_trainable);
  int first_reduce = -1, last_backward = -1, update = -1;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[static_cast<std::size_t>(i)];
    if (st.kind == StepKind::all_reduce) {
      EXPECT_EQ(st.stream, Stream::comm);
      if (first_reduce < 0) first_reduce = i;
    }
    if (st.kind == StepKind::backward) last_backward = i;
    if (st.kind == StepKind::update) update = i;
    if (st.kind == StepKind::wait_all_reduce) EXPECT_LT(i, update < 0 ? s.steps.size() : update);
  }
  EXPECT_LT(first_reduce, last_backward);
  // The buckets are tensors of the plan: the gradients' bytes again, at
  // the end of backward.
  std::size_t bucket_bytes = 0;
  for (const GradientBucket& b : s.buckets) bucket_bytes += s.tensors[b.tensor].info.bytes();
  EXPECT_GE(two.train.peak_load_bytes, one.train.peak_load_bytes);
  EXPECT_LE(two.train.peak_load_bytes, one.train.peak_load_bytes + bucket_bytes + 256 * s.buckets.size());
}

TEST(DataParallel, AllReducesAreSpansOfTheCommStreamBetweenPackAndUnpack) {
  const Network net = testing::residual_net();
  testing::Recorder events;
  train_ranks(net, 2, {.bucket_bytes = 512}, 1, &events);
  int packs = 0, reduces = 0, unpacks = 0;
  for (const SpanEvent& e : events.spans) {
    if (e.kind == SpanKind::all_reduce) {
      ++reduces;
      EXPECT_EQ(e.stream, Stream::comm);
      EXPECT_GT(e.bytes, 0u);
    }
    packs += e.kind == SpanKind::pack;
    unpacks += e.kind == SpanKind::unpack;
    if (e.kind == SpanKind::pack || e.kind == SpanKind::unpack) EXPECT_EQ(e.stream, Stream::compute);
  }
  EXPECT_GT(reduces, 1);
  EXPECT_EQ(packs, reduces);
  EXPECT_EQ(unpacks, reduces);
  // Bucket allocations show in the address map.
  EXPECT_TRUE(std::any_of(events.allocs.begin(), events.allocs.end(),
                          [](const AllocEvent& a) { return a.name.rfind("bucket", 0) == 0; }));
}

TEST(DataParallel, ATrainerRefusesMemorySettingsForAnotherNumberOfRanks) {
  const Network net = testing::residual_net();
  CpuDevice device;
  LocalGroup group(1);
  EXPECT_THROW(Trainer(device, net, {.batch = 8, .memory = {.ranks = 2}, .comm = &group.rank(0)}),
               std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
