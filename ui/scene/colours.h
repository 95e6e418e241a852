// One palette for every picture (ImGui and PNG), so a role or a stream has
// the same colour everywhere. Colours are 0xRRGGBB.
#pragma once

#include <cstdint>

#include "engine/observe/events.h"
#include "engine/core/tensor.h"

namespace tidepool::ui {

std::uint32_t role_colour(Role r);
std::uint32_t span_colour(SpanKind k);
inline constexpr std::uint32_t kInFlightToHost = 0xE8A33C;    // offload in progress
inline constexpr std::uint32_t kParked = 0xB8B8B8;             // outline of a parked block (dead, still taken)
inline constexpr std::uint32_t kInFlightFromHost = 0x3CC8E8;  // prefetch in progress
inline constexpr std::uint32_t kHole = 0x2A2A30;
inline constexpr std::uint32_t kLargestHole = 0xF0E040;
inline constexpr std::uint32_t kBudget = 0xE04040;
inline constexpr std::uint32_t kLoadLimit = 0xE0B040;  // AutoSwap's load limit, under the budget
inline constexpr std::uint32_t kLoad = 0x50B0F0;
inline constexpr std::uint32_t kExtent = 0xB080F0;
inline constexpr std::uint32_t kBackground = 0x18181C;

}  // namespace tidepool::ui
