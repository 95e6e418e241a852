// The static information (AccUDNN §3.2): each compute step's work, counted
// from the kernel calls its layer makes.
#include <gtest/gtest.h>

#include "engine/device/cpu/cpu_kernels.h"
#include "engine/perf/step_work.h"
#include "engine/perf/work.h"
#include "engine/plan/planner.h"
#include "models/registry.h"

namespace tidepool {
namespace {

TEST(WorkCounter, CountsAConvolutionsFlopsAndBothBackwardKernelsAsOneStep) {
  CpuKernels cpu;
  WorkCounter counter(cpu);
  ConvShape s{.n = 8, .c = 16, .h = 32, .w = 32, .k = 32, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  counter.conv_forward(s, ConvScheme::m, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(counter.take(), (Work{WorkClass::conv_forward, s.flops(), 1}));
  counter.conv_backward_data(s, ConvScheme::m, nullptr, nullptr, nullptr, nullptr);
  counter.conv_backward_weights(s, ConvScheme::m, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(counter.take(), (Work{WorkClass::conv_backward, 2 * s.flops(), 2}));
  EXPECT_EQ(counter.take(), Work{}) << "take() starts a fresh count";
}

TEST(WorkCounter, DepthwiseConvolutionsAreTheirOwnClass) {
  CpuKernels cpu;
  WorkCounter counter(cpu);
  ConvShape s{.n = 2, .c = 8, .h = 8, .w = 8, .k = 8, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .groups = 8};
  counter.conv_forward(s, ConvScheme::m, nullptr, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(counter.take().work_class, WorkClass::depthwise_forward);
}

TEST(WorkCounter, AsksTheRealKernelsForWorkspaceSizes) {
  CpuKernels cpu;
  WorkCounter counter(cpu);
  ConvShape s{.n = 4, .c = 3, .h = 32, .w = 32, .k = 16, .r = 3, .s = 3, .pad_h = 1, .pad_w = 1};
  for (ConvScheme scheme : {ConvScheme::m, ConvScheme::p})
    EXPECT_EQ(counter.conv_workspace_bytes(s, scheme, ConvPass::forward),
              cpu.conv_workspace_bytes(s, scheme, ConvPass::forward));
}

TEST(StepWork, EveryComputeStepOfResnet20CountsWorkAndConvForwardMatchesTheLayersFlops) {
  CpuKernels cpu;
  const Network net = models::make_model("resnet20", models::InputKind::cifar, 10);
  const Schedule s = plan_schedule(net, 16, {}, cpu);
  WorkCounter counter(cpu);
  double conv_flops = 0;
  int steps = 0;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const StepKind k = s.steps[static_cast<std::size_t>(i)].kind;
    const Work w = step_work(net, s, i, counter);
    const bool computes = k == StepKind::forward || k == StepKind::backward || k == StepKind::accumulate ||
                          k == StepKind::update;
    if (!computes) {
      EXPECT_EQ(w.kernels, 0) << "step " << i << " (" << to_string(k) << ") does no work";
      continue;
    }
    ++steps;
    if (k == StepKind::forward && w.work_class == WorkClass::conv_forward) conv_flops += w.flops;
    if (k == StepKind::update) EXPECT_EQ(w.work_class, WorkClass::update);
  }
  EXPECT_GT(steps, 100);
  double expected = 0;
  const NetworkShapes shapes = net.shapes(16);
  for (std::size_t i = 0; i < net.nodes().size(); ++i)
    if (net.nodes()[i].layer->kind() == "conv2d") expected += net.nodes()[i].layer->forward_flops(shapes.node_inputs[i]);
  EXPECT_DOUBLE_EQ(conv_flops, expected);
}

}  // namespace
}  // namespace tidepool
