// Events as a run sends them, for tests of what carries them (events.bin,
// the events other ranks forward to the window).
#pragma once

#include <string>
#include <vector>

#include "engine/observe/events.h"
#include "testing/recorder.h"

namespace tidepool::testing {

inline void send(EventSink& sink, const RecordedEvent& e) { send_event(sink, e); }

// "conv" and 3 → "conv3" (spelt out: GCC 12 warns about `"literal" +
// std::to_string(n)` in inlined code, wrongly).
inline std::string numbered(std::string prefix, int n, const char* suffix = "") {
  prefix += std::to_string(n);
  return prefix += suffix;
}

// Events as a run sends them: the set-up placement, then iterations of
// spans on every stream, allocations, frees and parks, load samples and a
// summary; every enum value, names that repeat, sizes past 4 GiB, times
// with fractions, an empty layer and a name in UTF-8.
inline std::vector<RecordedEvent> run_events(int iterations) {
  std::vector<RecordedEvent> out;
  const Role roles[] = {Role::input, Role::activation, Role::activation_gradient, Role::weight,
                        Role::weight_gradient, Role::optimizer_state, Role::workspace};
  for (int t = 0; t < 4; ++t)
    out.emplace_back(AllocEvent{.iteration = -1, .step = 0, .action = PoolAction::place, .tensor = t,
                                .name = numbered("conv", t, ".weight"), .role = Role::weight,
                                .offset = static_cast<std::size_t>(t) * 4096, .bytes = 4096, .time_us = 0.25 * t});
  const SpanKind kinds[] = {SpanKind::forward, SpanKind::backward, SpanKind::accumulate, SpanKind::update,
                            SpanKind::offload, SpanKind::prefetch, SpanKind::compress, SpanKind::decompress,
                            SpanKind::wait};
  for (int it = 0; it < iterations; ++it) {
    const double base = 1e6 * it + 0.125;
    for (int step = 0; step < 9; ++step) {
      const SpanKind kind = kinds[step];
      const Stream stream = kind == SpanKind::offload || kind == SpanKind::compress ? Stream::offload
                            : kind == SpanKind::prefetch || kind == SpanKind::decompress ? Stream::prefetch
                                                                                        : Stream::compute;
      out.emplace_back(SpanEvent{.iteration = it, .step = step, .stream = stream, .kind = kind,
                                 .layer = step == 4 ? "" : numbered("layer", step % 3),
                                 .tensor = step >= 4 ? numbered("activation→", step) : "",
                                 .bytes = (std::size_t{5} << 30) + static_cast<std::size_t>(step),
                                 .start_us = base + step * 10.5, .end_us = base + step * 10.5 + 7.75});
      out.emplace_back(AllocEvent{.iteration = it, .step = step,
                                  .action = static_cast<PoolAction>(step % 4), .tensor = 100 + step,
                                  .name = numbered("t", step % 3), .role = roles[step % 7],
                                  .offset = (std::size_t{6} << 30) + static_cast<std::size_t>(step) * 512,
                                  .bytes = 512, .time_us = base + step});
      out.emplace_back(LoadSample{.iteration = it, .step = step, .time_us = base + step + 0.5,
                                  .load_bytes = 1000u + static_cast<std::size_t>(step),
                                  .extent_bytes = 2000u + static_cast<std::size_t>(step),
                                  .largest_free_bytes = 300u + static_cast<std::size_t>(it)});
    }
    out.emplace_back(IterationSummary{.iteration = it, .start_us = base, .end_us = base + 100.5,
                                      .peak_load_bytes = 1008, .footprint_bytes = std::size_t{7} << 30,
                                      .peak_step = 8, .largest_free_at_peak = {4096, 256},
                                      .loss = 2.3f - 0.1f * it, .accuracy = 0.125f * it});
  }
  return out;
}

}  // namespace tidepool::testing
