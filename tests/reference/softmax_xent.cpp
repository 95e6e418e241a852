#include "reference/softmax_xent.h"

#include <cmath>

namespace tidepool::reference {

XentResult softmax_xent_forward(std::int64_t n, std::int64_t classes, const double* logits,
                                const std::int32_t* labels, double* probs) {
  XentResult r;
  for (std::int64_t row = 0; row < n; ++row) {
    const double* l = logits + row * classes;
    double* p = probs + row * classes;
    std::int64_t argmax = 0;
    for (std::int64_t j = 1; j < classes; ++j) {
      if (l[j] > l[argmax]) argmax = j;
    }
    double sum = 0.0;
    for (std::int64_t j = 0; j < classes; ++j) {
      p[j] = std::exp(l[j] - l[argmax]);
      sum += p[j];
    }
    for (std::int64_t j = 0; j < classes; ++j) p[j] /= sum;
    r.loss -= std::log(p[labels[row]]);
    if (argmax == labels[row]) ++r.correct;
  }
  r.loss /= static_cast<double>(n);
  return r;
}

void softmax_xent_backward(std::int64_t n, std::int64_t classes, const double* probs,
                           const std::int32_t* labels, double* dlogits) {
  for (std::int64_t row = 0; row < n; ++row) {
    for (std::int64_t j = 0; j < classes; ++j) {
      const double onehot = j == labels[row] ? 1.0 : 0.0;
      dlogits[row * classes + j] = (probs[row * classes + j] - onehot) / static_cast<double>(n);
    }
  }
}

}  // namespace tidepool::reference
