// One event of any kind, for what keeps events to send them on later (the
// run folder's start, a capture's set-up placement, the tests' recorder).
#pragma once

#include <type_traits>
#include <variant>

#include "engine/observe/events.h"

namespace tidepool {

using AnyEvent = std::variant<SpanEvent, AllocEvent, LoadSample, IterationSummary>;

// Sends `event` to the sink's method for its kind.
inline void send_event(EventSink& sink, const AnyEvent& event) {
  std::visit(
      [&](const auto& e) {
        using E = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<E, SpanEvent>) sink.on_span(e);
        else if constexpr (std::is_same_v<E, AllocEvent>) sink.on_alloc(e);
        else if constexpr (std::is_same_v<E, LoadSample>) sink.on_load(e);
        else sink.on_iteration(e);
      },
      event);
}

}  // namespace tidepool
