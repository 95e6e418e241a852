#include "engine/observe/events.h"

namespace tidepool {

const char* to_string(SpanKind k) {
  switch (k) {
    case SpanKind::forward: return "forward";
    case SpanKind::backward: return "backward";
    case SpanKind::accumulate: return "accumulate";
    case SpanKind::update: return "update";
    case SpanKind::offload: return "offload";
    case SpanKind::prefetch: return "prefetch";
    case SpanKind::compress: return "compress";
    case SpanKind::decompress: return "decompress";
    case SpanKind::wait: return "wait";
    case SpanKind::pack: return "pack";
    case SpanKind::all_reduce: return "all_reduce";
    case SpanKind::unpack: return "unpack";
    case SpanKind::recompute: return "recompute";
  }
  return "?";
}

}  // namespace tidepool
