// Softmax cross-entropy over rows of logits [n, classes], averaged over the
// batch, with the accuracy count the trainer reports.
//
// Numerically stable form: each row is shifted by its maximum before the
// exponential, so the largest term is exp(0) = 1 and nothing overflows, and
// the loss is taken as log(sum) - (logit[label] - max) rather than
// -log(prob[label]), which stays finite when that probability underflows to
// zero in float.
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "engine/device/cpu/cpu_kernels.h"

namespace tidepool {
namespace {

void check_label(std::int32_t label, std::int64_t classes, std::int64_t row) {
  if (label < 0 || label >= classes) {
    throw std::invalid_argument("softmax_xent: row " + std::to_string(row) + " has label " +
                                std::to_string(label) + " outside [0, " + std::to_string(classes) +
                                ")");
  }
}

}  // namespace

void CpuKernels::softmax_xent_forward(std::int64_t n, std::int64_t classes, const float* logits,
                                      const std::int32_t* labels, float* probs,
                                      float* loss_and_correct) {
  if (n <= 0 || classes <= 0) {
    throw std::invalid_argument("softmax_xent: empty batch or no classes");
  }
  // Summed in double: a float sum of a few hundred per-row losses loses the
  // digits the loss curve is plotted with.
  double loss_sum = 0.0;
  std::int64_t correct = 0, correct5 = 0;
  for (std::int64_t row = 0; row < n; ++row) {
    const float* l = logits + row * classes;
    float* p = probs + row * classes;
    const std::int32_t label = labels[row];
    check_label(label, classes, row);

    // First maximum on ties, so the accuracy does not depend on the
    // reduction order a vectorised argmax would use.
    std::int64_t argmax = 0;
    float max = l[0];
    for (std::int64_t j = 1; j < classes; ++j) {
      if (l[j] > max) {
        max = l[j];
        argmax = j;
      }
    }
    float sum = 0.0f;
    for (std::int64_t j = 0; j < classes; ++j) {
      p[j] = std::exp(l[j] - max);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    for (std::int64_t j = 0; j < classes; ++j) p[j] *= inv;

    loss_sum += std::log(static_cast<double>(sum)) - static_cast<double>(l[label] - max);
    if (argmax == label) ++correct;
    std::int64_t rank = 0;  // classes ranked above the label
    for (std::int64_t j = 0; j < classes && rank < 5; ++j)
      rank += l[j] > l[label] || (l[j] == l[label] && j < label);
    if (rank < 5) ++correct5;
  }
  loss_and_correct[0] = static_cast<float>(loss_sum / static_cast<double>(n));
  loss_and_correct[1] = static_cast<float>(correct);
  loss_and_correct[2] = static_cast<float>(correct5);
}

void CpuKernels::softmax_xent_backward(std::int64_t n, std::int64_t classes, const float* probs,
                                       const std::int32_t* labels, float* dlogits) {
  if (n <= 0 || classes <= 0) {
    throw std::invalid_argument("softmax_xent: empty batch or no classes");
  }
  // d(mean loss)/d(logit) = (softmax - onehot(label)) / n.
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::int64_t row = 0; row < n; ++row) {
    const float* p = probs + row * classes;
    float* d = dlogits + row * classes;
    const std::int32_t label = labels[row];
    check_label(label, classes, row);
    for (std::int64_t j = 0; j < classes; ++j) d[j] = p[j] * inv_n;
    d[label] -= inv_n;
  }
}

}  // namespace tidepool
