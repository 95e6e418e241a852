// Data-parallel sums on the cuda device (CudaDevice::all_reduce,
// engine/device/cuda/all_reduce.h), with ranks that are threads of this
// process (LocalGroup): ranks on one GPU sum through pinned host memory
// and train to the same bits, close to the cpu device's ranks; NCCL sums
// for one rank, and for two ranks where there are two GPUs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/local_group.h"
#include "engine/device/cpu/cpu_device.h"
#include "engine/run/trainer.h"
#include "gpu_testing.h"
#include "testing/batches.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

using testing::Batch;
using testing::shard;

constexpr std::int64_t kGlobalBatch = 16;


// Runs `work(r)` for every rank of `ranks`, one thread each (rank 0 on
// this one), and rethrows the first rank's exception once all are done.
void on_ranks(int ranks, const std::function<void(int)>& work) {
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  auto guarded = [&](int r) {
    try {
      work(r);
    } catch (...) {
      errors[static_cast<std::size_t>(r)] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> others;
    for (int r = 1; r < ranks; ++r) others.emplace_back(guarded, r);
    guarded(0);
  }
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

struct RankResult {
  std::vector<float> parameters;
  std::uint64_t checksum = 0;
  std::string way;  // CudaDevice::all_reduce_way, on the cuda device
};

// `ranks` trainers on devices `make_device` gives, `steps` SGD steps on
// their shards of the same global batches, batch norm's statistics then
// sent from rank 0 (as every evaluation does); what each ends with.
std::vector<RankResult> train_ranks(const std::function<std::unique_ptr<Device>()>& make_device,
                                    const Network& net, int ranks, MemorySettings memory, int steps) {
  LocalGroup group(ranks);
  std::vector<RankResult> out(static_cast<std::size_t>(ranks));
  memory.ranks = ranks;
  on_ranks(ranks, [&](int r) {
    const std::unique_ptr<Device> device = make_device();
    Trainer trainer(*device, net,
                    {.batch = kGlobalBatch / ranks, .memory = memory, .seed = 5, .comm = &group.rank(r)});
    for (int i = 0; i < steps; ++i) {
      const Batch b = shard(testing::quadrant_batch(kGlobalBatch, 100 + static_cast<unsigned>(i)), r, ranks);
      trainer.train_step(b.images.data(), b.labels.data());
    }
    trainer.broadcast_statistics();
    RankResult& mine = out[static_cast<std::size_t>(r)];
    mine.parameters = trainer.read_parameters();
    mine.checksum = trainer.param_checksum();
    if (const auto* cuda = dynamic_cast<const CudaDevice*>(device.get())) mine.way = cuda->all_reduce_way(group.rank(r));
  });
  return out;
}

std::unique_ptr<Device> gpu() { return std::make_unique<CudaDevice>(); }
std::unique_ptr<Device> cpu() { return std::make_unique<CpuDevice>(); }

// Two ranks on GPU 0 cannot use NCCL (it refuses two ranks on one GPU), so
// they sum on the host: the same bits on both, and the numbers of the cpu
// device's two ranks up to the devices' f32 rounding (as GpuTraining
// compares one process).
TEST(GpuDataParallel, TwoRanksOnOneGpuSumOnTheHostAndEndWithTheSameParameters) {
  TIDEPOOL_REQUIRE_GPU();
  const Network net = testing::residual_net();
  const auto on_gpu = train_ranks(gpu, net, 2, {.bucket_bytes = 512}, 3);
  EXPECT_EQ(on_gpu[0].way, "host");
  EXPECT_EQ(on_gpu[1].way, "host");
  EXPECT_EQ(on_gpu[0].checksum, on_gpu[1].checksum);
  EXPECT_TRUE(testing::bit_equal(on_gpu[0].parameters, on_gpu[1].parameters));

  const auto on_cpu = train_ranks(cpu, net, 2, {.bucket_bytes = 512}, 3);
  EXPECT_EQ(on_cpu[0].checksum, on_cpu[1].checksum);
  EXPECT_TRUE(testing::close_to_cpu(on_gpu[0].parameters, on_cpu[0].parameters, 1e-3, 1e-4));

  // Offloading and smaller buckets group the gradients otherwise, and
  // every element still sums the same two values.
  const auto offloaded = train_ranks(gpu, net, 2, {.mode = OffloadMode::all, .bucket_bytes = 64}, 3);
  EXPECT_EQ(offloaded[0].checksum, on_gpu[0].checksum);
  EXPECT_EQ(offloaded[1].checksum, on_gpu[1].checksum);
}

// Each rank's values, different per rank and not round.
std::vector<float> rank_values(int rank, std::size_t count) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = 0.37f * static_cast<float>(i % 101) - 1.3f * static_cast<float>(rank + 1);
  return v;
}

// What each rank of `ranks` (one thread and one device each, on the GPU
// `ordinal(rank)`) holds after summing rank_values(rank, count) for each
// count of `counts` in turn, with the way the device chose.
struct Summed {
  std::vector<std::vector<float>> last;  // per rank: the last count's sums
  std::vector<std::string> ways;
};
Summed sum_over_ranks(int ranks, const std::function<int(int)>& ordinal, const std::vector<std::size_t>& counts) {
  LocalGroup group(ranks);
  Summed s{std::vector<std::vector<float>>(static_cast<std::size_t>(ranks)),
           std::vector<std::string>(static_cast<std::size_t>(ranks))};
  on_ranks(ranks, [&](int r) {
    CudaDevice device({.ordinal = ordinal(r)});
    std::size_t most = 0;
    for (std::size_t c : counts) most = std::max(most, c);
    auto* data = reinterpret_cast<float*>(device.reserve_arena(most * sizeof(float)));
    for (std::size_t count : counts) {
      const std::vector<float> mine = rank_values(r, count);
      device.copy_async(Stream::compute, data, mine.data(), count * sizeof(float));
      device.synchronize();
      device.all_reduce(Stream::comm, data, count, group.rank(r));
      std::vector<float>& back = s.last[static_cast<std::size_t>(r)];
      back.assign(count, 0.0f);
      device.copy_async(Stream::comm, back.data(), data, count * sizeof(float));
      device.synchronize();
    }
    s.ways[static_cast<std::size_t>(r)] = device.all_reduce_way(group.rank(r));
  });
  return s;
}

// Two operands add the same in either order, so the expected sums are
// exact whoever adds them.
std::vector<float> expected_sum(int ranks, std::size_t count) {
  std::vector<float> sum(count, 0.0f);
  for (int r = 0; r < ranks; ++r) {
    const std::vector<float> v = rank_values(r, count);
    for (std::size_t i = 0; i < count; ++i) sum[i] += v[i];
  }
  return sum;
}

// The host way's staging buffer grows when a larger bucket comes, and the
// copy back of the smaller one it replaces is done first.
TEST(GpuDataParallel, RanksSharingAGpuSumThroughAStagingBufferThatGrows) {
  TIDEPOOL_REQUIRE_GPU();
  const std::vector<std::size_t> counts = {1000, 300000, 70000};
  const Summed s = sum_over_ranks(2, [](int) { return 0; }, counts);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(s.ways[static_cast<std::size_t>(r)], "host");
    EXPECT_TRUE(testing::bit_equal(s.last[static_cast<std::size_t>(r)], expected_sum(2, counts.back()))) << "rank " << r;
  }
}

// One rank with NCCL: the sum of one is the input, through ncclAllReduce
// on the comm stream. A second Communicator gets an NCCL communicator of
// its own, and the first goes on working.
TEST(GpuDataParallel, NcclSumsOverOneRank) {
  TIDEPOOL_REQUIRE_GPU();
  if (!cuda_nccl_built()) GTEST_SKIP() << "this build has no NCCL (configured with TIDEPOOL_NCCL OFF, or not found)";
  const Summed s = sum_over_ranks(1, [](int) { return 0; }, {5000, 12345});
  EXPECT_EQ(s.ways[0], "nccl");
  EXPECT_TRUE(testing::bit_equal(s.last[0], rank_values(0, 12345)));

  CudaDevice device;
  auto* data = reinterpret_cast<float*>(device.reserve_arena(4096 * sizeof(float)));
  LocalGroup first(1), second(1);
  const std::vector<float> values = rank_values(0, 4096);
  for (Communicator* ranks : {&first.rank(0), &second.rank(0), &first.rank(0)}) {
    device.copy_async(Stream::compute, data, values.data(), values.size() * sizeof(float));
    device.synchronize();
    device.all_reduce(Stream::comm, data, values.size(), *ranks);
    std::vector<float> back(values.size());
    device.copy_async(Stream::comm, back.data(), data, back.size() * sizeof(float));
    device.synchronize();
    EXPECT_TRUE(testing::bit_equal(back, values));
  }
  EXPECT_EQ(device.all_reduce_way(first.rank(0)), "nccl");
  EXPECT_EQ(device.all_reduce_way(second.rank(0)), "nccl");
}

// Two ranks on GPUs of their own sum with NCCL, one thread per GPU.
TEST(GpuDataParallel, RanksOnTwoGpusSumWithNccl) {
  TIDEPOOL_REQUIRE_GPU();
  if (!cuda_nccl_built()) GTEST_SKIP() << "this build has no NCCL (configured with TIDEPOOL_NCCL OFF, or not found)";
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  const std::vector<std::size_t> counts = {1000, 300000};
  const Summed s = sum_over_ranks(2, [](int r) { return r; }, counts);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(s.ways[static_cast<std::size_t>(r)], "nccl");
    EXPECT_TRUE(testing::bit_equal(s.last[static_cast<std::size_t>(r)], expected_sum(2, counts.back()))) << "rank " << r;
  }
}

}  // namespace
}  // namespace tidepool
