// AccUDNN on our schedules: the sequences a schedule makes, the
// predictions, and mode accudnn's choice, planned and trained.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/device/gpu_queries.h"
#include "engine/device/sim/sim_device.h"
#include "engine/memory/copy_waits.h"
#include "engine/perf/spec_profiles.h"
#include "engine/perf/step_work.h"
#include "engine/plan/accudnn_schedule.h"
#include "engine/plan/memory_plan.h"
#include "engine/plan/planner.h"
#include "models/registry.h"
#include "testing/batches.h"
#include "testing/networks.h"
#include "testing/recorder.h"
#include "testing/training.h"

namespace tidepool {
namespace {

PerfModel m40_with_link(double gbps) {
  Profile p = *specification_profile("m40");
  p.to_host.gbps = p.to_device.gbps = gbps;
  return PerfModel(p);
}

TEST(AccudnnSchedule, TheSequencesHaveALayerPerComputeStepAndAMapPerOffloadedTensor) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const Schedule all = plan_schedule(net, 32, {Phase::train, {.mode = OffloadMode::all}, {}}, cpu);
  const PerfModel model = m40_with_link(12);
  const AccSchedule a = accudnn_problem(net, all, model, cpu, 0);
  int compute = 0, offloaded = 0;
  double compute_us = 0;
  WorkCounter counter(cpu);
  for (int i = 0; i < static_cast<int>(all.steps.size()); ++i) {
    const StepKind k = all.steps[static_cast<std::size_t>(i)].kind;
    if (k == StepKind::forward || k == StepKind::backward || k == StepKind::accumulate || k == StepKind::update) {
      ++compute;
      compute_us += model.compute_us(step_work(net, all, i, counter));
    }
  }
  for (const PlannedTensor& t : all.tensors) offloaded += t.offloaded;
  EXPECT_EQ(static_cast<int>(a.problem.layers.size()), compute);
  EXPECT_EQ(static_cast<int>(a.problem.maps.size()), offloaded);
  ASSERT_EQ(a.map_tensor.size(), a.problem.maps.size());
  double sum = 0;
  for (const AccLayer& l : a.problem.layers) sum += l.compute_us;
  EXPECT_NEAR(sum, compute_us, 1e-6 * compute_us);
  for (std::size_t m = 0; m < a.problem.maps.size(); ++m) {
    const AccFeatureMap& map = a.problem.maps[m];
    EXPECT_EQ(map.name, all.tensors[static_cast<std::size_t>(a.map_tensor[m])].info.name);
    EXPECT_LT(map.offload_after, map.needed_by) << map.name;
    EXPECT_LT(map.fetch_after, map.needed_by) << map.name;
    EXPECT_DOUBLE_EQ(map.prefetch_us, model.copy_us(all.tensors[static_cast<std::size_t>(a.map_tensor[m])].info.bytes(), false));
  }
}

TEST(AccudnnSchedule, WithoutOffloadsTheIterationIsTheComputeAndAFastLinkHidesTheCopies) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const Schedule base = plan_schedule(net, 32, {Phase::train, {}, {}}, cpu);
  const Schedule all = plan_schedule(net, 32, {Phase::train, {.mode = OffloadMode::all}, {}}, cpu);
  const Prediction none = predict(net, base, m40_with_link(12), cpu);
  EXPECT_EQ(none.stall_us, 0);
  EXPECT_GT(none.iteration_us, 0);
  EXPECT_NEAR(predict(net, all, m40_with_link(1e6), cpu).stall_us, 0, 1e-3 * none.iteration_us);
  const Prediction slow = predict(net, all, m40_with_link(0.5), cpu);
  EXPECT_GT(slow.stall_us, 0.5 * none.iteration_us) << "half a GB/s cannot bring the maps back in time";
  EXPECT_NEAR(slow.iteration_us, none.iteration_us + slow.stall_us, 1e-6 * slow.iteration_us);
}

// A data-parallel schedule adds a layer per bucket's pack and unpack
// (compute-stream kernels) and nothing for the all-reduces between them,
// which a PerfModel cannot time (it has no network): its prediction is one
// rank's plus the packs and unpacks.
TEST(AccudnnSchedule, ADataParallelScheduleAddsItsPacksAndUnpacksAsLayers) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const PerfModel model = m40_with_link(12);
  const Schedule one = plan_schedule(net, 32, {Phase::train, {}, {}}, cpu);
  const Schedule eight = plan_schedule(net, 32, {Phase::train, {.ranks = 8, .bucket_bytes = 64 << 10}, {}}, cpu);
  ASSERT_GT(eight.buckets.size(), 3u);
  WorkCounter counter(cpu);
  double bucket_us = 0;
  for (int i = 0; i < static_cast<int>(eight.steps.size()); ++i) {
    const StepKind k = eight.steps[static_cast<std::size_t>(i)].kind;
    if (k != StepKind::all_reduce && k != StepKind::wait_all_reduce) continue;
    const Work w = step_work(net, eight, i, counter);
    EXPECT_GT(w.kernels, 0) << "a pack or unpack copies every gradient of its bucket";
    bucket_us += model.compute_us(w);
  }
  const AccSchedule a = accudnn_problem(net, eight, model, cpu, 0);
  EXPECT_EQ(a.problem.layers.size(), accudnn_problem(net, one, model, cpu, 0).problem.layers.size() + 2 * eight.buckets.size());
  EXPECT_EQ(a.problem.layers.back().name, "sgd");
  const Prediction p1 = predict(net, one, model, cpu), p8 = predict(net, eight, model, cpu);
  EXPECT_EQ(p8.stall_us, 0);
  EXPECT_NEAR(p8.iteration_us, p1.iteration_us + bucket_us, 1e-6 * p8.iteration_us);
}

// Three simulated iterations of resnet20 at batch 64 on the V100 in a
// mode and budget, recorded, and what copy_waits says of its plan's pool.
struct SimulatedRun {
  Schedule train;
  CopyWaits waits;
  testing::Recorder recorder;
  double iteration_us = 0;  // the last iteration's, simulated
  Prediction in_pool, anywhere;
};
SimulatedRun simulate(const Network& net, const PerfModel& model, const GpuQueries& queries, OffloadMode mode,
                      std::size_t budget) {
  SimulatedRun r;
  SimDevice sim{model};
  Trainer trainer(sim, net, {.batch = 64, .memory = {.mode = mode, .budget_bytes = budget}}, &r.recorder);
  for (unsigned i = 0; i < 3; ++i) {
    const testing::Batch b = testing::random_batch(64, i, {3 * 32 * 32, 10});
    trainer.train_step(b.images.data(), b.labels.data());
  }
  r.train = trainer.train_schedule();
  const MemoryPlan& plan = trainer.memory();
  r.waits = copy_waits(r.train, ScheduleTraces(r.train), plan.settings.heuristic, plan.pool_bytes, r.train.park_horizon);
  r.iteration_us = r.recorder.iterations.back().end_us - r.recorder.iterations.back().start_us;
  r.in_pool = predict_in_pool(net, r.train, model, queries, plan.settings.heuristic, plan.pool_bytes);
  r.anywhere = predict(net, r.train, model, queries);
  return r;
}

// In the pool it runs in, the prediction counts what the simulated run
// does there: the blocks the pool places over bytes an offload's copy
// still reads wait for that copy (the run's waits are at the steps, and
// for the tensors, that copy_waits names), and blocks still parked when
// their tensors come back need no copy (the run fetches back just the
// tensors copy_waits does not call reclaimed). On the V100, resnet20 at
// batch 64:
//   - in mode autoswap in the least pool that offloading everything needs,
//     forward reuses blocks whose copies are still running, and the waits
//     add a third to the iteration (17.2 ms simulated, 12.7 predicted
//     without the pool);
//   - in mode all halfway between that pool and base's, parked blocks
//     come back without a copy, and the iteration is shorter than every
//     fetch would make it.
TEST(AccudnnSchedule, InItsPoolThePredictionIsTheSimulatedRuns) {
  const Profile v100 = *specification_profile("v100");
  const PerfModel model(v100);
  const GpuQueries queries(v100.gpu);
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const std::size_t least = plan_memory(net, 64, {.mode = OffloadMode::all}, queries, {}, &model).minimum_pool_bytes;
  const std::size_t base = plan_memory(net, 64, {}, queries, {}, &model).needed_pool_bytes;

  const SimulatedRun tight = simulate(net, model, queries, OffloadMode::autoswap, least);
  std::map<std::string, int> id;
  for (std::size_t t = 0; t < tight.train.tensors.size(); ++t) id[tight.train.tensors[t].info.name] = static_cast<int>(t);
  const std::int64_t last = tight.recorder.iterations.back().iteration;
  int waited = 0;
  for (const SpanEvent& e : tight.recorder.spans) {
    // The waits for copies still running: at placements (alloc steps),
    // not a prefetch's wait, and not the instant a finished copy takes.
    if (e.iteration != last || e.kind != SpanKind::wait || !(e.end_us > e.start_us)) continue;
    if (tight.train.steps[static_cast<std::size_t>(e.step)].kind != StepKind::alloc) continue;
    const std::vector<int>& at = tight.waits.at_step[static_cast<std::size_t>(e.step)];
    EXPECT_NE(std::find(at.begin(), at.end(), id.at(e.tensor)), at.end()) << "step " << e.step << " waits for " << e.tensor;
    ++waited;
  }
  EXPECT_GT(waited, 0) << "no block waited for a copy: the test shows nothing";
  EXPECT_GE(tight.waits.waits(), waited) << "a copy done by the time its range is reused costs no wait";
  EXPECT_NEAR(tight.in_pool.iteration_us, tight.iteration_us, 0.01 * tight.iteration_us);
  EXPECT_LT(tight.anywhere.iteration_us, 0.8 * tight.iteration_us) << "without the pool, nothing waits";

  const SimulatedRun roomy = simulate(net, model, queries, OffloadMode::all, least + (base - least) / 2);
  ASSERT_GT(roomy.train.park_horizon, 0);
  int reclaimed = 0;
  for (std::size_t t = 0; t < roomy.train.tensors.size(); ++t) {
    if (!roomy.train.tensors[t].offloaded) continue;
    const std::string& name = roomy.train.tensors[t].info.name;
    const bool fetched = std::any_of(roomy.recorder.spans.begin(), roomy.recorder.spans.end(), [&](const SpanEvent& e) {
      return e.iteration == last && e.kind == SpanKind::prefetch && e.tensor == name;
    });
    EXPECT_EQ(fetched, !roomy.waits.reclaimed[t]) << name;
    reclaimed += roomy.waits.reclaimed[t];
  }
  EXPECT_GT(reclaimed, 0) << "no block stayed parked: the test shows nothing";
  EXPECT_NEAR(roomy.in_pool.iteration_us, roomy.iteration_us, 0.01 * roomy.iteration_us);
  EXPECT_GT(roomy.anywhere.iteration_us, roomy.iteration_us) << "every offload fetched back costs more";
}

// On the M40's 12 GB/s, resnet20 at batch 32 stalls 3 ms of 14 with
// everything offloaded and fetched back (AccUDNN's model: predict, no
// pool); mode accudnn keeps half of it and stalls a tenth. (In the pool
// without a budget, `all` parks most blocks until backward takes them
// back without a copy, and is predicted, and simulated, faster still.)
TEST(AccudnnMode, KeepsWhatWouldStallAndOffloadsTheRest) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const PerfModel model = m40_with_link(12);
  const MemoryPlan all = plan_memory(net, 32, {.mode = OffloadMode::all}, cpu, {}, &model);
  const MemoryPlan acc = plan_memory(net, 32, {.mode = OffloadMode::accudnn}, cpu, {}, &model);
  const Prediction all_fetched = predict(net, all.train, model, cpu), acc_fetched = predict(net, acc.train, model, cpu);
  EXPECT_GT(all_fetched.stall_us, 0.1 * all_fetched.iteration_us);
  EXPECT_LT(acc_fetched.stall_us, all_fetched.stall_us / 4);
  EXPECT_LT(acc_fetched.iteration_us, all_fetched.iteration_us);
  EXPECT_GT(acc.offloaded_bytes(), 0u) << "some maps go without a stall";
  EXPECT_LT(acc.offloaded_bytes(), all.offloaded_bytes());
  EXPECT_FALSE(acc.accudnn_pinned.empty());
  EXPECT_EQ(acc.minimum_pool_bytes, all.minimum_pool_bytes) << "the least it can do is offload everything";
}

// Planned on the M40's own answers, as a run on it would be: on the host's
// kernels the pools hang on oneDNN's workspaces, which change with the
// processor and its thread count (with two OpenMP threads on an AVX-512
// host the pool search ended above a budget that fits).
TEST(AccudnnMode, FitsItsBudgetOrRefusesWithTheMinimumAndNeedsAModel) {
  const GpuQueries m40{specification_profile("m40")->gpu};
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const PerfModel model = m40_with_link(2);
  const MemoryPlan all = plan_memory(net, 32, {.mode = OffloadMode::all}, m40, {}, &model);
  const MemoryPlan base = plan_memory(net, 32, {}, m40);
  const std::size_t between = (all.minimum_pool_bytes + base.needed_pool_bytes) / 2;
  const MemoryPlan acc = plan_memory(net, 32, {.mode = OffloadMode::accudnn, .budget_bytes = between}, m40, {}, &model);
  EXPECT_EQ(acc.pool_bytes, between);
  EXPECT_LE(acc.needed_pool_bytes, between);
  try {
    plan_memory(net, 32, {.mode = OffloadMode::accudnn, .budget_bytes = all.minimum_pool_bytes / 2}, m40, {}, &model);
    ADD_FAILURE();
  } catch (const MemoryRefusal& e) {
    EXPECT_EQ(e.minimum_pool_bytes(), all.minimum_pool_bytes);
  }
  EXPECT_THROW(plan_memory(net, 32, {.mode = OffloadMode::accudnn}, m40), std::invalid_argument);
}

// Offloading never changes the numbers, whatever AccUDNN keeps: on a link
// where some maps go without a stall (12 GB/s), it really offloads (its
// schedule pins host memory), and trains base's bits.
TEST(AccudnnMode, TrainsToTheSameParametersAsBase) {
  const Network net = testing::residual_net();
  const PerfModel model = m40_with_link(12);
  TrainerOptions base{.batch = 8, .memory = {.scheme = ConvScheme::m}};
  TrainerOptions acc = base;
  acc.memory.mode = OffloadMode::accudnn;
  acc.model = &model;
  const testing::TrainingOutcome a = testing::train_on_cpu(net, base, 3), b = testing::train_on_cpu(net, acc, 3);
  EXPECT_EQ(a.pinned_bytes, 0u);
  EXPECT_GT(b.pinned_bytes, 0u) << "AccUDNN offloaded nothing: the comparison would be base against base";
  EXPECT_EQ(a.checksum, b.checksum);
  EXPECT_EQ(a.parameters, b.parameters);
}

}  // namespace
}  // namespace tidepool
