// Flush-to-zero and denormals-are-zero for the calling thread and its
// OpenMP team (the threads oneDNN runs on for it).
//
// Why: as training converges, gradients and momenta shrink into the
// denormal range, where every x86 multiply-add takes a microcode assist
// (~100 cycles). Without this a resnet20 run slowed from 350 to 27 images/s
// in its third epoch. The setting is the same in every run and mode, so
// determinism across offload modes and allocators is unaffected.
#pragma once

namespace tidepool {

void flush_denormals_on_this_thread();

}  // namespace tidepool
