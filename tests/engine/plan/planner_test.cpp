#include <gtest/gtest.h>

#include <set>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/plan/planner.h"
#include "testing/networks.h"

namespace tidepool {
namespace {

// Walks a schedule and checks that every step touches only live tensors.
void expect_well_formed(const Schedule& s) {
  std::vector<bool> live(s.tensors.size(), false);
  for (int t : s.persistent) live[t] = true;
  auto expect_live = [&](int t, int step, const char* what) {
    if (t >= 0) EXPECT_TRUE(live[t]) << "step " << step << " (" << what << ") uses "
                                     << s.tensors[t].info.name << " while it is not allocated";
  };
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    switch (st.kind) {
      case StepKind::alloc:
        EXPECT_FALSE(live[st.tensor]) << s.tensors[st.tensor].info.name << " allocated twice";
        live[st.tensor] = true;
        break;
      case StepKind::free:
        expect_live(st.tensor, i, "free");
        live[st.tensor] = false;
        break;
      case StepKind::forward:
      case StepKind::backward: {
        const NodeTensors& nt = s.nodes[st.node];
        const bool fwd = st.kind == StepKind::forward;
        for (int t : nt.params) expect_live(t, i, "param");
        for (int t : nt.saved) expect_live(t, i, "saved");
        expect_live(fwd ? nt.forward_workspace : nt.backward_workspace, i, "workspace");
        if (fwd) {
          for (int t : nt.inputs) expect_live(t, i, "input");
          expect_live(nt.output, i, "output");
        } else {
          expect_live(nt.output_grad, i, "output grad");
          for (int t : nt.input_grads) expect_live(t, i, "input grad");
        }
        break;
      }
      case StepKind::accumulate:
        expect_live(st.tensor, i, "accumulate target");
        expect_live(st.source, i, "accumulate source");
        break;
      default:
        break;
    }
  }
  for (int t = 0; t < static_cast<int>(live.size()); ++t)
    if (!s.tensors[t].persistent) EXPECT_FALSE(live[t]) << s.tensors[t].info.name << " leaks";
}

TEST(Planner, TrainScheduleTouchesOnlyLiveTensors) {
  CpuKernels k;
  for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p}) {
    const Network net = testing::residual_net();
    expect_well_formed(plan_schedule(net, 4, {Phase::train, {.scheme = scheme}}, k));
    expect_well_formed(plan_schedule(net, 4, {Phase::eval, {.scheme = scheme}}, k));
  }
}

TEST(Planner, BackwardReadsAreKeptAndOthersFreedInForward) {
  CpuKernels k;
  const Network net = testing::residual_net();
  const Schedule s = plan_schedule(net, 4, {Phase::train, {.scheme = ConvScheme::p}}, k);
  // relu1's output feeds conv2, whose backward reads its input: it survives
  // until backward. Nobody's backward reads the avg-pool output (dropout
  // keeps only its mask) or the global pool's (flatten reads nothing).
  auto freed_at = [&](const std::string& name) {
    for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
      if (s.steps[i].kind == StepKind::free && s.tensors[s.steps[i].tensor].info.name == name) return i;
    return -1;
  };
  int first_backward = -1;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
    if (s.steps[i].kind == StepKind::backward) {
      first_backward = i;
      break;
    }
  ASSERT_GT(first_backward, 0);
  EXPECT_GT(freed_at("relu1"), first_backward);
  EXPECT_LT(freed_at("avg"), first_backward) << "nobody's backward reads the avg-pool output";
  EXPECT_LT(freed_at("gap"), first_backward) << "flatten's backward reads nothing";
  EXPECT_GT(freed_at("flatten"), first_backward) << "the linear layer's dW reads its input";
  EXPECT_GT(freed_at("data"), first_backward) << "conv1's weight gradient reads the images";
}

TEST(Planner, FanOutGradientsAccumulate) {
  CpuKernels k;
  const Schedule s = plan_schedule(testing::residual_net(), 2, {Phase::train, {.scheme = ConvScheme::p}}, k);
  int accumulates = 0;
  for (const Step& st : s.steps)
    if (st.kind == StepKind::accumulate) {
      ++accumulates;
      EXPECT_EQ(s.tensors[st.tensor].info.name, "relu1.grad");
    }
  EXPECT_EQ(accumulates, 1) << "relu1 feeds conv2 and the residual add";
}

TEST(Planner, ActivationGradientsAreFreedRightAfterTheirConsumer) {
  CpuKernels k;
  const Schedule s = plan_schedule(testing::residual_net(), 2, {Phase::train, {.scheme = ConvScheme::p}}, k);
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[i];
    if (st.kind != StepKind::backward) continue;
    const int g = s.nodes[st.node].output_grad;
    if (g < 0) continue;
    bool freed = false;
    for (int j = i + 1; j < static_cast<int>(s.steps.size()) && s.steps[j].kind != StepKind::backward; ++j)
      freed = freed || (s.steps[j].kind == StepKind::free && s.steps[j].tensor == g);
    EXPECT_TRUE(freed) << s.tensors[g].info.name << " outlives the backward pass that consumed it";
  }
}

TEST(Planner, EvalHasNoBackwardAndSharesParameterIds) {
  CpuKernels k;
  const Network net = testing::residual_net();
  const Schedule train = plan_schedule(net, 4, {Phase::train, {.scheme = ConvScheme::p}}, k);
  const Schedule eval = plan_schedule(net, 3, {Phase::eval, {.scheme = ConvScheme::m}}, k);
  for (const Step& st : eval.steps) {
    EXPECT_NE(st.kind, StepKind::backward);
    EXPECT_NE(st.kind, StepKind::update);
  }
  ASSERT_EQ(train.persistent, eval.persistent);
  for (int t : train.persistent) EXPECT_EQ(train.tensors[t].info.name, eval.tensors[t].info.name);
  EXPECT_LT(eval.peak_load_bytes, train.peak_load_bytes);
}

TEST(Planner, ParameterCountExcludesRunningStatistics) {
  const Network net = testing::residual_net(true, false, 4);
  // conv1 3*8*9, bn1 8+8, conv2 8*8*9, dw 8*9, fc 8*4+4
  EXPECT_EQ(net.parameter_count(), 216 + 16 + 576 + 72 + 36);
}

TEST(Network, RejectsBadGraphs) {
  Network n("bad", {3, 8, 8}, 2);
  EXPECT_THROW(n.add(std::make_unique<Relu>("r"), {"nope"}), std::invalid_argument);
  n.add(std::make_unique<Relu>("r"), {"data"});
  EXPECT_THROW(n.add(std::make_unique<Relu>("r"), {"data"}), std::invalid_argument);
  EXPECT_THROW(n.add(std::make_unique<Relu>("data"), {"r"}), std::invalid_argument);
  n.add(std::make_unique<Conv2d>("big", Conv2dOptions{.out_channels = 2, .kernel = 9}), {"r"});
  EXPECT_THROW(n.shapes(1), std::invalid_argument) << "a 9x9 kernel does not fit an 8x8 image";
  EXPECT_THROW(n.shapes(0), std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
