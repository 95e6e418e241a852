// The stream timeline as data: one lane per stream, one span per layer or
// transfer, for the last few iterations of a snapshot. The ImGui view and
// the --batch PNG both draw this; neither reads events directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/observe/events.h"
#include "engine/observe/sinks/ring_sink.h"

namespace tidepool::ui {

struct TimelineSpan {
  Stream lane = Stream::compute;
  SpanKind kind = SpanKind::forward;
  std::int64_t iteration = 0;
  int step = 0;
  double start_us = 0, end_us = 0;
  std::string layer, tensor;
  std::size_t bytes = 0;
  // A compute-stream span that only waited: on a transfer (a prefetch the
  // next layer needs, or an offload whose memory an allocation reuses).
  bool stall() const { return kind == SpanKind::wait && lane == Stream::compute; }
  double duration_us() const { return end_us - start_us; }
  std::string label() const;  // "conv1 fwd", "offload conv1.out", ...
};

struct TimelineIteration {
  std::int64_t iteration = 0;
  double start_us = 0, end_us = 0;
  double stall_us = 0;  // total compute-stream wait
};

struct TimelineScene {
  double start_us = 0, end_us = 0;  // covers every span and iteration
  std::vector<TimelineSpan> spans;  // in start order
  std::vector<TimelineIteration> iterations;
  // Two runs compared (`tidepool view A B`): the view spans at least this
  // long, the other run's iterations, so that both share a time scale.
  double axis_us = 0;
  bool empty() const { return spans.empty(); }
  // Whether offloads were compressed on the host (compress spans shown).
  bool compresses() const;
  // Whether it holds data-parallel all-reduces (the comm lane is drawn then).
  bool communicates() const;
  // Whether layers were computed again for backward (recompute spans).
  bool recomputes() const;
  // The other legs of `span`'s round trip to the host: for an offload,
  // compress, decompress or prefetch, the spans of the same tensor in the
  // same iteration that move it too (its offload and its prefetch, and
  // their compression); nothing for other spans. Points into `spans`.
  std::vector<const TimelineSpan*> round_trip(const TimelineSpan& span) const;
};

// The spans of the last `iterations` iterations of the snapshot that have a
// summary (finished iterations), plus the one in progress if `in_progress`.
TimelineScene build_timeline(const RingSnapshot& events, int iterations, bool in_progress = false);

// Every finished iteration of the snapshot with its compute-stream stall
// time, oldest first (for stall histories; no spans are copied).
std::vector<TimelineIteration> iteration_stalls(const RingSnapshot& events);

}  // namespace tidepool::ui
