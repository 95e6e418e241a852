// Plain-loop fully connected layer in double:
// y[n, out] = x[n, in] * W[out, in]^T + b[out]. A null b or db means no bias.
#pragma once

#include "engine/device/kernels.h"

namespace tidepool::reference {

void linear_forward(const LinearShape& s, const double* x, const double* w, const double* b,
                    double* y);
void linear_backward_data(const LinearShape& s, const double* dy, const double* w, double* dx);
void linear_backward_weights(const LinearShape& s, const double* x, const double* dy, double* dw,
                             double* db);

}  // namespace tidepool::reference
