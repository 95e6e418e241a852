// Element types. Its own header because the cuda kernels, which nvcc
// compiles as C++17, need it and not the rest of engine/core/tensor.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tidepool {

// f16 and bf16 store activations and their gradients under --precision
// (engine/step_calls/f32_views.h); i32 holds labels.
enum class DType : std::uint8_t { f32, f16, bf16, i32 };

std::size_t dtype_bytes(DType t);
std::string_view to_string(DType t);

}  // namespace tidepool
