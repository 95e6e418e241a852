#include "reference/softmax_xent.h"

#include <algorithm>
#include <cmath>
#include <vector>

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
    // Top 5 by sorting class indices (ties: the lower index first).
    std::vector<std::int64_t> order(static_cast<std::size_t>(classes));
    for (std::int64_t j = 0; j < classes; ++j) order[static_cast<std::size_t>(j)] = j;
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return l[a] > l[b]; });
    for (std::size_t j = 0; j < order.size() && j < 5; ++j)
      if (order[j] == labels[row]) ++r.correct5;
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
