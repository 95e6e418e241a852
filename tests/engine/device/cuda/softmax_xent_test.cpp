// Softmax cross-entropy against the cpu device: probabilities (cuDNN), the
// mean loss and the top-1/top-5 counts (our kernel), and the gradient.
//
// Tolerances: exp and log differ by an ulp or two between libraries and the
// row sums are added in another order: probabilities and gradients 1e-5
// relative (1e-7 absolute for the tiny ones), the loss 1e-5 relative. The
// counts are integers and must match exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpu_testing.h"

namespace tidepool {
namespace {

using testing::close_to_cpu;
using testing::GpuTest;
using testing::random_floats;

class GpuSoftmaxXent : public GpuTest {};

TEST_F(GpuSoftmaxXent, LossCountsProbabilitiesAndGradientMatchTheCpuDevice) {
  struct Case {
    std::int64_t n, classes;
    float scale;
  };
  // CIFAR-10 and ImageNet sizes; large logits test the max shift.
  for (const Case& c :
       {Case{37, 10, 3.0f}, Case{128, 10, 1.0f}, Case{64, 1000, 5.0f}, Case{5, 3, 80.0f}}) {
    SCOPED_TRACE("n=" + std::to_string(c.n) + " classes=" + std::to_string(c.classes));
    const auto total = static_cast<std::size_t>(c.n * c.classes);
    const std::vector<float> logits = random_floats(total, 71, -c.scale, c.scale);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(c.n));
    for (std::size_t i = 0; i < labels.size(); ++i)
      labels[i] = static_cast<std::int32_t>((i * 7919) % static_cast<std::size_t>(c.classes));

    std::vector<float> probs(total), out(3), dlogits(total);
    cpu.softmax_xent_forward(c.n, c.classes, logits.data(), labels.data(), probs.data(),
                             out.data());
    cpu.softmax_xent_backward(c.n, c.classes, probs.data(), labels.data(), dlogits.data());

    float* gl = upload(logits);
    std::int32_t* glab = upload(labels);
    float *gp = nan_buffer(total), *gout = nan_buffer(3), *gd = nan_buffer(total);
    run([&](Kernels& k) {
      k.softmax_xent_forward(c.n, c.classes, gl, glab, gp, gout);
      k.softmax_xent_backward(c.n, c.classes, gp, glab, gd);
    });
    const std::vector<float> got = download(gout, 3);
    EXPECT_NEAR(got[0], out[0], 1e-5 * std::fabs(out[0]) + 1e-6) << "mean loss";
    EXPECT_EQ(got[1], out[1]) << "top-1 count";
    EXPECT_EQ(got[2], out[2]) << "top-5 count";
    EXPECT_TRUE(close_to_cpu(download(gp, total), probs, 1e-5, 1e-7));
    EXPECT_TRUE(close_to_cpu(download(gd, total), dlogits, 1e-5, 1e-7));
  }
}

TEST_F(GpuSoftmaxXent, TiesGoToTheFirstMaximumAsOnTheCpu) {
  // Every logit equal: the label ranks first only if it is class 0, and in
  // the top 5 if it is one of classes 0-4.
  const std::int64_t n = 10, classes = 10;
  const std::vector<float> logits(static_cast<std::size_t>(n * classes), 0.5f);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    labels[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(i);
  float* gl = upload(logits);
  std::int32_t* glab = upload(labels);
  float *gp = nan_buffer(logits.size()), *gout = nan_buffer(3);
  run([&](Kernels& k) { k.softmax_xent_forward(n, classes, gl, glab, gp, gout); });
  const std::vector<float> got = download(gout, 3);
  EXPECT_NEAR(got[0], std::log(10.0f), 1e-6);
  EXPECT_EQ(got[1], 1.0f);
  EXPECT_EQ(got[2], 5.0f);
}

TEST_F(GpuSoftmaxXent, ALabelOutOfRangeMakesTheLossNaN) {
  const std::vector<float> logits = random_floats(20, 72);
  const std::vector<std::int32_t> labels = {0, 1, 10, 3};  // 10 is not a class of 5
  float* gl = upload(logits);
  std::int32_t* glab = upload(labels);
  float *gp = nan_buffer(20), *gout = nan_buffer(3);
  run([&](Kernels& k) { k.softmax_xent_forward(4, 5, gl, glab, gp, gout); });
  EXPECT_TRUE(std::isnan(download(gout, 3)[0]));
}

}  // namespace
}  // namespace tidepool
