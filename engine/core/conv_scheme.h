// vDNN's two convolution-algorithm schemes. Its own header because a
// layer's call carries one (LayerArgs::scheme, engine/core/layer.h) and the
// kernels take one (engine/device/kernel_shapes.h), and the layers sit
// below the device.
#pragma once

#include <cstdint>

namespace tidepool {

// `m` takes the algorithm with the least workspace, `p` the fastest one.
// (Its words are the settings': engine/schedule/memory_settings.h.)
enum class ConvScheme : std::uint8_t { m, p };

}  // namespace tidepool
