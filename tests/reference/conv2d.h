// Plain-loop convolution in double: the ground truth the oneDNN kernels are
// checked against. Same layouts and conventions as kernels.h: NCHW data,
// weights [k, c / groups, r, s], PyTorch dilation (1 = dense), zero padding,
// output size rounded down. Backward functions overwrite their outputs.
#pragma once

#include "engine/device/kernels.h"

namespace tidepool::reference {

void conv2d_forward(const ConvShape& s, const double* x, const double* w,
                    const double* b /* null unless s.bias */, double* y);
void conv2d_backward_data(const ConvShape& s, const double* dy, const double* w, double* dx);
void conv2d_backward_weights(const ConvShape& s, const double* x, const double* dy, double* dw,
                             double* db /* null unless s.bias */);

}  // namespace tidepool::reference
