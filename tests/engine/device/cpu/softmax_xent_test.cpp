// Softmax cross-entropy against the reference: probabilities, mean loss,
// accuracy count (first arg-max on ties), the (probs - onehot) / n gradient,
// and stability for logits far outside exp's range.
#include "reference/softmax_xent.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "engine/device/cpu/cpu_kernels.h"
#include "testing/kernel_testing.h"

namespace tidepool {
namespace {

using testing::all_close;
using testing::nan_filled;
using testing::random_floats;
using testing::to_double;

std::vector<std::int32_t> labels_for(std::int64_t n, std::int64_t classes, std::uint32_t seed) {
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  const auto u = random_floats(labels.size(), seed, 0.0f, 1.0f);
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<std::int32_t>(u[i] * static_cast<float>(classes)) %
                static_cast<std::int32_t>(classes);
  }
  return labels;
}

TEST(SoftmaxXentKernel, MatchesReferenceForward) {
  CpuKernels k;
  for (std::int64_t classes : {2, 10, 100}) {
    const std::int64_t n = 16;
    const auto logits = random_floats(static_cast<std::size_t>(n * classes), 71, -4.0f, 4.0f);
    const auto labels = labels_for(n, classes, 72);
    std::vector<float> probs = nan_filled(logits.size()), out = nan_filled(3);
    k.softmax_xent_forward(n, classes, logits.data(), labels.data(), probs.data(), out.data());
    std::vector<double> probs_ref(logits.size());
    const auto ld = to_double(logits);
    const auto r =
        reference::softmax_xent_forward(n, classes, ld.data(), labels.data(), probs_ref.data());
    EXPECT_TRUE(all_close(probs, probs_ref, 1e-5, 1e-7)) << classes << " classes";
    EXPECT_NEAR(out[0], r.loss, 1e-5 * (1.0 + r.loss)) << classes << " classes";
    EXPECT_EQ(out[1], static_cast<float>(r.correct)) << classes << " classes";
    EXPECT_EQ(out[2], static_cast<float>(r.correct5)) << classes << " classes";
  }
}

TEST(SoftmaxXentKernel, CorrectCount) {
  CpuKernels k;
  // Rows: argmax 2 (label 2, right), argmax 0 (label 1, wrong), a tie
  // between 1 and 3 resolved to the first (label 1, right), a tie resolved
  // to 1 while the label is 3 (wrong).
  const std::vector<float> logits = {0.0f, 1.0f, 5.0f, 2.0f,  //
                                     9.0f, 1.0f, 5.0f, 2.0f,  //
                                     0.0f, 7.0f, 5.0f, 7.0f,  //
                                     0.0f, 7.0f, 5.0f, 7.0f};
  const std::vector<std::int32_t> labels = {2, 1, 1, 3};
  std::vector<float> probs(16), out(3);
  k.softmax_xent_forward(4, 4, logits.data(), labels.data(), probs.data(), out.data());
  EXPECT_EQ(out[1], 2.0f);
  EXPECT_EQ(out[2], 4.0f) << "with four classes every label is in the top 5";
  for (int row = 0; row < 4; ++row) {
    float sum = 0.0f;
    for (int j = 0; j < 4; ++j) sum += probs[static_cast<std::size_t>(row * 4 + j)];
    EXPECT_NEAR(sum, 1.0f, 1e-6f) << "row " << row;
  }
}

TEST(SoftmaxXentKernel, MatchesReferenceBackward) {
  CpuKernels k;
  const std::int64_t n = 8, classes = 10;
  const auto logits = random_floats(static_cast<std::size_t>(n * classes), 73, -3.0f, 3.0f);
  const auto labels = labels_for(n, classes, 74);
  std::vector<float> probs(logits.size()), out(3);
  k.softmax_xent_forward(n, classes, logits.data(), labels.data(), probs.data(), out.data());
  std::vector<float> dlogits = nan_filled(logits.size());
  k.softmax_xent_backward(n, classes, probs.data(), labels.data(), dlogits.data());
  std::vector<double> d_ref(logits.size());
  const auto pd = to_double(probs);
  reference::softmax_xent_backward(n, classes, pd.data(), labels.data(), d_ref.data());
  EXPECT_TRUE(all_close(dlogits, d_ref, 1e-6, 1e-8));
  // Each row's gradient sums to zero: softmax is shift-invariant.
  for (std::int64_t row = 0; row < n; ++row) {
    double sum = 0.0;
    for (std::int64_t j = 0; j < classes; ++j)
      sum += dlogits[static_cast<std::size_t>(row * classes + j)];
    EXPECT_NEAR(sum, 0.0, 1e-7) << "row " << row;
  }
}

TEST(SoftmaxXentKernel, StableForHugeLogits) {
  CpuKernels k;
  // exp(1000) overflows float; the label's probability underflows to 0 in
  // float, yet the loss must be the finite 2000 - log(1) ~ 2000.
  const std::vector<float> logits = {1000.0f, -1000.0f, 0.0f, 999.0f};
  const std::vector<std::int32_t> labels = {1, 0};
  std::vector<float> probs(4), out(3);
  k.softmax_xent_forward(2, 2, logits.data(), labels.data(), probs.data(), out.data());
  for (float p : probs) EXPECT_TRUE(std::isfinite(p));
  // Row 0: log(e^1000 + e^-1000) - (-1000) = 2000. Row 1: logits {0, 999},
  // label 0: log(1 + e^999) - 0 = 999. Mean: 1499.5.
  const double expected = (2000.0 + 999.0) / 2.0;
  EXPECT_TRUE(std::isfinite(out[0]));
  EXPECT_NEAR(out[0], expected, 1e-3);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(SoftmaxXentKernel, RejectsOutOfRangeLabels) {
  CpuKernels k;
  const std::vector<float> logits = {0.0f, 1.0f};
  const std::vector<std::int32_t> labels = {2};
  std::vector<float> probs(2), out(3), d(2);
  EXPECT_THROW(k.softmax_xent_forward(1, 2, logits.data(), labels.data(), probs.data(), out.data()),
               std::invalid_argument);
  EXPECT_THROW(k.softmax_xent_backward(1, 2, probs.data(), labels.data(), d.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace tidepool
