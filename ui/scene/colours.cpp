#include "ui/scene/colours.h"

namespace tidepool::ui {

std::uint32_t role_colour(Role r) {
  switch (r) {
    case Role::input: return 0x9AA0A6;                // grey: the batch
    case Role::activation: return 0x4C9BE8;           // blue
    case Role::activation_gradient: return 0xE8664C;  // red-orange
    case Role::weight: return 0x5CBF6A;               // green
    case Role::weight_gradient: return 0xA8D86A;      // light green
    case Role::optimizer_state: return 0x3E8C73;      // teal
    case Role::workspace: return 0xC678DD;            // violet
  }
  return 0xFFFFFF;
}

std::uint32_t span_colour(SpanKind k) {
  switch (k) {
    case SpanKind::forward: return 0x4C9BE8;
    case SpanKind::backward: return 0xE8664C;
    // Pink: work of backward's, clearly apart from the offloads' orange.
    case SpanKind::accumulate: return 0xE87FB0;
    case SpanKind::update: return 0x5CBF6A;
    case SpanKind::offload: return kInFlightToHost;
    case SpanKind::prefetch: return kInFlightFromHost;
    // The host's work on a transfer: its copy's colour, darker.
    case SpanKind::compress: return 0x9C6A22;
    case SpanKind::decompress: return 0x22849C;
    // Pure red, apart from backward's red-orange; the timeline hatches it.
    case SpanKind::wait: return 0xFF2020;
    // Gradient communication: violet, the bucket's copies paler.
    case SpanKind::pack: return 0xB9A6E0;
    case SpanKind::all_reduce: return 0x8172B2;
    case SpanKind::unpack: return 0xB9A6E0;
    // Yellow: forward work done a second time, apart from forward's blue
    // and the transfers it stands in for.
    case SpanKind::recompute: return 0xF2E35C;
  }
  return 0xFFFFFF;
}

}  // namespace tidepool::ui
