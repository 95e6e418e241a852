// Plain-loop batch normalisation in double (per channel over n, h, w).
// Training normalises with the batch mean and biased variance, reports them
// as saved_mean/saved_var and moves the running statistics towards the
// batch's mean and unbiased variance (PyTorch's convention).
#pragma once

#include "engine/device/kernels.h"

namespace tidepool::reference {

void batchnorm_forward_train(const BatchNormShape& s, const double* x, const double* gamma,
                             const double* beta, double* y, double* saved_mean, double* saved_var,
                             double* running_mean, double* running_var);
void batchnorm_forward_infer(const BatchNormShape& s, const double* x, const double* gamma,
                             const double* beta, const double* running_mean,
                             const double* running_var, double* y);
// Gradient of the training-mode forward (batch statistics depend on x).
void batchnorm_backward(const BatchNormShape& s, const double* x, const double* dy,
                        const double* gamma, const double* saved_mean, const double* saved_var,
                        double* dx, double* dgamma, double* dbeta);

}  // namespace tidepool::reference
