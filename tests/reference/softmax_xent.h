// Reference softmax cross-entropy in double over logits [n, classes]:
// probabilities, the batch-mean loss -log(prob[label]), the number of rows
// whose first arg-max is the label, and d(mean loss)/d(logits).
#pragma once

#include <cstdint>

namespace tidepool::reference {

struct XentResult {
  double loss = 0.0;
  std::int64_t correct = 0;
  std::int64_t correct5 = 0;  // label among the five largest logits
};

XentResult softmax_xent_forward(std::int64_t n, std::int64_t classes, const double* logits,
                                const std::int32_t* labels, double* probs);
void softmax_xent_backward(std::int64_t n, std::int64_t classes, const double* probs,
                           const std::int32_t* labels, double* dlogits);

}  // namespace tidepool::reference
