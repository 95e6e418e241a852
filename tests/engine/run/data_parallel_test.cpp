// Data-parallel training with ranks that are threads of this process
// (engine/comm/local_group.h): the gradient buckets of the plan, their
// all-reduces on the comm stream, and the invariant that every rank ends
// with the same parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/fusion.h"
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
using testing::shard;
using testing::quadrant_batch;

constexpr std::int64_t kGlobalBatch = 16;


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

// --sync-bn: batch norm over the global batch.

// Batch norm in every layout it meets on the cpu device: 16 channels
// (channel-blocked, in blocks of 8 on AVX2 and 16 on AVX-512), 6 channels
// (NCHW), and a 2-D [n, c] one after a linear layer. No dropout: its masks
// are drawn per element of each rank's part, so no two runs on different
// numbers of ranks could agree.
const std::map<std::string, std::int64_t> kBatchNormChannels = {{"bn1", 16}, {"bn2", 6}, {"bn3", 8}};

Network batchnorm_net() {
  Network n("batchnorms", {3, 8, 8}, 4);
  std::string x = n.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 16, .padding = 1}), {"data"});
  x = n.add(std::make_unique<BatchNorm>("bn1"), {x});
  x = n.add(std::make_unique<Relu>("relu1"), {x});
  x = n.add(std::make_unique<Conv2d>("conv2", Conv2dOptions{.out_channels = 6, .padding = 1}), {x});
  x = n.add(std::make_unique<BatchNorm>("bn2"), {x});
  x = n.add(std::make_unique<Relu>("relu2"), {x});
  x = n.add(std::make_unique<Pool2d>("gap", PoolOptions{.kind = PoolKind::avg, .global = true}), {x});
  x = n.add(std::make_unique<Flatten>("flatten"), {x});
  x = n.add(std::make_unique<Linear>("fc1", 8), {x});
  x = n.add(std::make_unique<BatchNorm>("bn3"), {x});
  x = n.add(std::make_unique<Relu>("relu3"), {x});
  x = n.add(std::make_unique<Linear>("fc2", 4), {x});
  n.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {x, "labels"});
  return n;
}

double worst_difference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, static_cast<double>(std::abs(a[i] - b[i])));
  return worst;
}

// The running statistics among read_parameters()' values (the weight-role
// tensors in persistent order): the parameters that have no gradient.
std::vector<float> running_statistics(const Network& net, const std::vector<float>& parameters) {
  CpuDevice device;
  const Schedule s = plan_memory(net, 8, {}, device.kernels()).train;
  std::vector<bool> statistic(s.tensors.size(), false);
  for (const NodeTensors& nt : s.nodes)
    for (std::size_t j = 0; j < nt.params.size(); ++j) statistic[nt.params[j]] = nt.param_grads[j] < 0;
  std::vector<float> out;
  std::size_t at = 0;
  for (int t : s.persistent) {
    const TensorInfo& info = s.tensors[t].info;
    if (info.role != Role::weight) continue;
    const auto count = static_cast<std::size_t>(info.shape.numel());
    if (statistic[t]) out.insert(out.end(), parameters.begin() + at, parameters.begin() + at + count);
    at += count;
  }
  EXPECT_EQ(at, parameters.size());
  return out;
}

// PyTorch's SyncBatchNorm: two ranks on halves of a batch normalise with
// the whole batch's statistics, so they take the step one rank takes on all
// of it (up to the order of the sums), running statistics included.
// Without it each rank normalises with its own half's, and they do not.
TEST(DataParallel, WithSyncBnTwoRanksOnHalvesTakeTheStepOfOneRankOnTheWholeBatch) {
  const Network net = batchnorm_net();
  const auto one = train_ranks(net, 1, {.sync_bn = true}, 3);
  const auto synced = train_ranks(net, 2, {.sync_bn = true}, 3);
  const auto each = train_ranks(net, 2, {}, 3);
  const double worst = worst_difference(synced[0].parameters, one[0].parameters);
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(worst, 0.0) << "bit-identical would mean the ranks summed in one rank's order, which they do not";
  const std::vector<float> stats = running_statistics(net, one[0].parameters);
  ASSERT_EQ(stats.size(), 2u * (16 + 6 + 8));
  EXPECT_LT(worst_difference(running_statistics(net, synced[0].parameters), stats), 1e-5)
      << "the running statistics are the whole batch's";
  EXPECT_GT(worst_difference(each[0].parameters, one[0].parameters), 1e-3)
      << "each rank's own statistics are not the whole batch's";
  EXPECT_GT(worst_difference(running_statistics(net, each[0].parameters), stats), 1e-3);
}

// Every rank computes its statistics from the same summed sums, so the
// ranks agree without rank 0's being sent round; each rank's own do not.
TEST(DataParallel, WithSyncBnEveryRankHasTheSameRunningStatisticsWithoutABroadcast) {
  const Network net = batchnorm_net();
  const auto synced = train_ranks(net, 2, {.sync_bn = true}, 2);
  EXPECT_EQ(synced[0].checksum, synced[1].checksum);
  EXPECT_NE(synced[0].loss, synced[1].loss) << "the ranks trained on different shards";
  const auto each = train_ranks(net, 2, {}, 2);
  EXPECT_NE(running_statistics(net, each[0].parameters), running_statistics(net, each[1].parameters));
}

TEST(DataParallel, WithSyncBnOffloadModesHeuristicsAndBucketsKeepTheBits) {
  const Network net = batchnorm_net();
  const auto base = train_ranks(net, 2, {.mode = OffloadMode::base, .sync_bn = true}, 2);
  const auto all = train_ranks(
      net, 2, {.mode = OffloadMode::all, .heuristic = "first-fit", .bucket_bytes = 64, .sync_bn = true}, 2);
  const auto conv = train_ranks(net, 2,
                                {.mode = OffloadMode::conv,
                                 .transfer = TransferMode::sync,
                                 .copy_engine = CopyEngine::threads,
                                 .sync_bn = true},
                                2);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(base[r].checksum, all[r].checksum) << "rank " << r;
    EXPECT_EQ(base[r].checksum, conv[r].checksum) << "rank " << r;
  }
}

// 16-bit activations: the f32 copies a step works on are widened before
// the pass's first part and rounded after its second, with the sums
// all-reduced in between.
TEST(DataParallel, WithSyncBnBf16RanksTakeTheStepOfOneRank) {
  const Network net = batchnorm_net();
  const auto one = train_ranks(net, 1, {.precision = Precision::bf16, .sync_bn = true}, 2);
  const auto two = train_ranks(net, 2, {.precision = Precision::bf16, .sync_bn = true}, 2);
  EXPECT_EQ(two[0].checksum, two[1].checksum);
  EXPECT_LT(worst_difference(two[0].parameters, one[0].parameters), 1e-3);
}

// --fuse relu under --sync-bn: the batch norms keep their ReLUs (the
// kernels that sum over the ranks have no fused form), and a fused one is
// refused when it is planned in parts rather than run on its own rank's
// statistics.
TEST(DataParallel, WithSyncBnBatchNormsKeepTheirRelusAndAFusedOneIsRefused) {
  const Network kept = fuse(batchnorm_net(), Fusion::relu, /*sync_bn=*/true);
  EXPECT_EQ(kept.nodes().size(), batchnorm_net().nodes().size());
  const auto one = train_ranks(kept, 1, {.sync_bn = true}, 2);
  const auto two = train_ranks(kept, 2, {.sync_bn = true}, 2);
  EXPECT_LT(worst_difference(two[0].parameters, one[0].parameters), 1e-5);
  const Network fused = fuse(batchnorm_net(), Fusion::relu);
  ASSERT_EQ(fused.nodes()[1].layer->kind(), "batchnorm_relu");
  CpuDevice device;
  try {
    plan_memory(fused, 8, {.ranks = 2, .sync_bn = true}, device.kernels());
    ADD_FAILURE() << "a fused batch norm planned in parts";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bn1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--sync-bn"), std::string::npos) << e.what();
  }
}

// One rank has no other statistics to sync with: --sync-bn plans and
// computes exactly what it does without.
TEST(DataParallel, OnOneRankSyncBnChangesNothing) {
  const Network net = batchnorm_net();
  CpuDevice device;
  const MemoryPlan plain = plan_memory(net, 8, {}, device.kernels());
  const MemoryPlan synced = plan_memory(net, 8, {.sync_bn = true}, device.kernels());
  EXPECT_FALSE(synced.train.syncs_statistics());
  for (const NodeTensors& nt : synced.train.nodes) {
    EXPECT_EQ(nt.forward_rank_sums, 0u);
    EXPECT_EQ(nt.backward_rank_sums, 0u);
  }
  EXPECT_EQ(synced.train.peak_load_bytes, plain.train.peak_load_bytes);
  EXPECT_EQ(train_ranks(net, 1, {.sync_bn = true}, 2)[0].checksum, train_ranks(net, 1, {}, 2)[0].checksum);
}

// The sums live in the training passes' workspaces, behind the f32 views:
// 2c + 1 doubles per batch norm and pass, nothing in evaluation.
TEST(DataParallel, SyncBnPlansEachBatchNormsSumsInItsWorkspaces) {
  const Network net = batchnorm_net();
  CpuDevice device;
  const MemoryPlan each = plan_memory(net, 8, {.ranks = 2}, device.kernels());
  const MemoryPlan synced = plan_memory(net, 8, {.ranks = 2, .sync_bn = true}, device.kernels());
  ASSERT_TRUE(synced.train.syncs_statistics());
  EXPECT_FALSE(synced.eval.syncs_statistics());
  const std::map<std::string, std::int64_t>& channels = kBatchNormChannels;
  const Schedule& s = synced.train;
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const std::string& name = net.nodes()[i].layer->name();
    const NodeTensors& nt = s.nodes[i];
    const auto bn = channels.find(name);
    const std::size_t expected = bn == channels.end() ? 0 : static_cast<std::size_t>(2 * bn->second + 1);
    EXPECT_EQ(nt.forward_rank_sums, expected) << name;
    EXPECT_EQ(nt.backward_rank_sums, expected) << name;
    EXPECT_EQ(synced.eval.nodes[i].forward_rank_sums, 0u) << name;
    if (!expected) continue;
    for (int w : {nt.forward_workspace, nt.backward_workspace}) {
      ASSERT_GE(w, 0) << name;
      EXPECT_GE(s.tensors[w].info.bytes(), rank_sums_bytes(expected)) << name;
    }
  }
  // A few hundred bytes a workspace, which need not be at the peak.
  EXPECT_GE(synced.train.peak_load_bytes, each.train.peak_load_bytes);
  EXPECT_EQ(synced.eval.peak_load_bytes, each.eval.peak_load_bytes);
}

// Each batch norm's sums, forward and backward, are an all-reduce of the
// comm stream (in the schedule's order with the buckets), which the compute
// stream waits for between the pass's two parts.
TEST(DataParallel, WithSyncBnEachBatchNormsSumsAreAllReducedOnTheCommStream) {
  const Network net = batchnorm_net();
  testing::Recorder events;
  train_ranks(net, 2, {.bucket_bytes = 512, .sync_bn = true}, 1, &events);
  std::map<std::string, int> reduced, waited;
  int bn1_forward_parts = 0;
  for (const SpanEvent& e : events.spans) {
    if (e.layer == "bn1" && e.kind == SpanKind::forward) ++bn1_forward_parts;
    const bool sums = e.tensor.find("sums") != std::string::npos;
    if (!sums) continue;
    if (e.kind == SpanKind::all_reduce) {
      EXPECT_EQ(e.stream, Stream::comm) << e.tensor;
      const std::int64_t c = kBatchNormChannels.at(e.tensor.substr(0, e.tensor.find('.')));
      EXPECT_EQ(e.bytes, static_cast<std::size_t>(2 * c + 1) * sizeof(double)) << e.tensor;
      ++reduced[e.tensor];
    }
    if (e.kind == SpanKind::wait) {
      EXPECT_EQ(e.stream, Stream::compute);
      ++waited[e.tensor];
    }
  }
  const std::map<std::string, int> once = {{"bn1.sums", 1}, {"bn1.grad_sums", 1}, {"bn2.sums", 1},
                                           {"bn2.grad_sums", 1}, {"bn3.sums", 1}, {"bn3.grad_sums", 1}};
  EXPECT_EQ(reduced, once);
  EXPECT_EQ(waited, once);
  EXPECT_EQ(bn1_forward_parts, 2) << "the sums part and the rest";
}

TEST(DataParallel, ATrainerKeepsTheRunsSyncBnWhateverItIsAskedToApply) {
  const Network net = batchnorm_net();
  CpuDevice device;
  LocalGroup group(2);
  TrainerOptions options;
  options.batch = 8;
  options.memory.ranks = 2;
  options.memory.sync_bn = true;
  options.comm = &group.rank(0);
  Trainer trainer(device, net, options);
  trainer.apply({.mode = OffloadMode::all});
  EXPECT_TRUE(trainer.memory().settings.sync_bn);
  EXPECT_TRUE(trainer.train_schedule().syncs_statistics());
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
