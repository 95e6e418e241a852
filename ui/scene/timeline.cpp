#include "ui/scene/timeline.h"

#include <algorithm>
#include <set>

namespace tidepool::ui {

std::string TimelineSpan::label() const {
  switch (kind) {
    case SpanKind::forward: return layer + " fwd";
    case SpanKind::backward: return layer + " bwd";
    case SpanKind::accumulate: return layer + " acc";
    case SpanKind::recompute: return layer + " recompute";
    case SpanKind::update: return "update";
    case SpanKind::offload: return "offload " + tensor;
    case SpanKind::prefetch: return "prefetch " + tensor;
    case SpanKind::compress: return "compress " + tensor;
    case SpanKind::decompress: return "decompress " + tensor;
    case SpanKind::wait: return "wait " + (tensor.empty() ? layer : tensor);
    case SpanKind::pack: return "pack " + tensor;
    case SpanKind::all_reduce: return "all-reduce " + tensor;
    case SpanKind::unpack: return "unpack " + tensor;
  }
  return layer;
}

namespace {

bool moves_to_or_from_host(SpanKind k) {
  return k == SpanKind::offload || k == SpanKind::prefetch || k == SpanKind::compress || k == SpanKind::decompress;
}

}  // namespace

std::vector<const TimelineSpan*> TimelineScene::round_trip(const TimelineSpan& span) const {
  if (!moves_to_or_from_host(span.kind) || span.tensor.empty()) return {};
  auto same = [&](const TimelineSpan& s) { return s.iteration == span.iteration && s.tensor == span.tensor; };
  const auto offload = std::find_if(spans.begin(), spans.end(), [&](const TimelineSpan& s) {
    return s.kind == SpanKind::offload && same(s);
  });
  if (offload == spans.end()) return {};
  // Its legs: the offload, its compression and decompression, and the
  // prefetches after it (not the batch's upload before it, which moves a
  // tensor of the same name the other way first).
  std::vector<const TimelineSpan*> legs;
  for (const TimelineSpan& s : spans)
    if (moves_to_or_from_host(s.kind) && same(s) && (s.kind != SpanKind::prefetch || s.start_us >= offload->start_us))
      legs.push_back(&s);
  const auto self = std::find(legs.begin(), legs.end(), &span);
  if (self == legs.end()) return {};
  legs.erase(self);
  return legs;
}

bool TimelineScene::compresses() const {
  return std::any_of(spans.begin(), spans.end(), [](const TimelineSpan& s) { return s.kind == SpanKind::compress; });
}

bool TimelineScene::recomputes() const {
  return std::any_of(spans.begin(), spans.end(), [](const TimelineSpan& s) { return s.kind == SpanKind::recompute; });
}

bool TimelineScene::communicates() const {
  return std::any_of(spans.begin(), spans.end(), [](const TimelineSpan& s) { return s.lane == Stream::comm; });
}

TimelineScene build_timeline(const RingSnapshot& events, int iterations, bool in_progress) {
  TimelineScene scene;
  if (iterations <= 0) return scene;
  // The iterations to show: the last `iterations` finished ones (those with
  // a summary), and the newest unfinished one if asked for.
  std::set<std::int64_t> keep;
  for (auto it = events.iterations.rbegin();
       it != events.iterations.rend() && static_cast<int>(keep.size()) < iterations; ++it)
    keep.insert(it->iteration);
  if (in_progress && !events.spans.empty()) {
    const std::int64_t newest = events.spans.back().iteration;
    if (!keep.count(newest)) {
      keep.insert(newest);
      if (static_cast<int>(keep.size()) > iterations) keep.erase(keep.begin());
    }
  }
  if (keep.empty()) return scene;

  for (const IterationSummary& s : events.iterations)
    if (keep.count(s.iteration)) scene.iterations.push_back({s.iteration, s.start_us, s.end_us, 0});
  for (const SpanEvent& e : events.spans) {
    if (!keep.count(e.iteration)) continue;
    TimelineSpan s{e.stream, e.kind, e.iteration, e.step, e.start_us, e.end_us, e.layer, e.tensor, e.bytes};
    if (s.stall())
      for (auto& it : scene.iterations)
        if (it.iteration == s.iteration) it.stall_us += s.duration_us();
    scene.spans.push_back(std::move(s));
  }
  std::stable_sort(scene.spans.begin(), scene.spans.end(),
                   [](const TimelineSpan& a, const TimelineSpan& b) { return a.start_us < b.start_us; });
  bool first = true;
  auto cover = [&](double a, double b) {
    scene.start_us = first ? a : std::min(scene.start_us, a);
    scene.end_us = first ? b : std::max(scene.end_us, b);
    first = false;
  };
  for (const auto& s : scene.spans) cover(s.start_us, s.end_us);
  for (const auto& it : scene.iterations) cover(it.start_us, it.end_us);
  return scene;
}

std::vector<TimelineIteration> iteration_stalls(const RingSnapshot& events) {
  std::vector<TimelineIteration> out;
  out.reserve(events.iterations.size());
  for (const IterationSummary& s : events.iterations) out.push_back({s.iteration, s.start_us, s.end_us, 0});
  if (out.empty()) return out;
  // Summaries are in iteration order; look each stall's iteration up.
  for (const SpanEvent& e : events.spans) {
    if (e.kind != SpanKind::wait || e.stream != Stream::compute) continue;
    auto it = std::lower_bound(out.begin(), out.end(), e.iteration,
                               [](const TimelineIteration& t, std::int64_t i) { return t.iteration < i; });
    if (it != out.end() && it->iteration == e.iteration) it->stall_us += e.end_us - e.start_us;
  }
  return out;
}

}  // namespace tidepool::ui
