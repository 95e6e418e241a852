#include "ui/scene/fragmentation.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/memory/allocator.h"
#include "engine/memory/figures.h"
#include "engine/memory/replay.h"

namespace tidepool::ui {
namespace {

// cnmem's first pool can be set; the registry names it so.
constexpr std::string_view kCnmem = "cnmem";

std::unique_ptr<Allocator> make_for(const PaperSequence& sequence, const std::string& heuristic) {
  if (heuristic == kCnmem && sequence.cnmem_initial_pool_bytes > 0)
    return make_cnmem_allocator(sequence.pool_bytes, sequence.cnmem_initial_pool_bytes);
  return make_allocator(heuristic, sequence.pool_bytes);
}

// The frame of one heuristic's pool now: its taken blocks (labelled with
// the trace's ids), and the figures as the replay loop computes them.
ReplayFrame frame_of(const PoolReplay& pool, const std::map<std::size_t, ReplayBlock>& labels, int event) {
  ReplayFrame f;
  f.event = event;
  f.live.reserve(pool.taken().size());
  for (const auto& [offset, end] : pool.taken()) f.live.push_back(labels.at(offset));
  const PoolStats stats = pool.stats();
  f.load_bytes = pool.load_bytes();
  f.extent_bytes = stats.extent_bytes;
  f.largest_free_block_bytes = stats.largest_free_block_bytes;
  f.largest_free_below_extent_bytes = pool.largest_free_below_extent().bytes;
  const std::span<const std::size_t> boundaries = pool.allocator().pool_starts();
  f.pool_boundaries.assign(boundaries.begin(), boundaries.end());
  return f;
}

HeuristicReplay replay_one(const PaperSequence& sequence, const std::string& heuristic) {
  const std::unique_ptr<Allocator> allocator = make_for(sequence, heuristic);
  PoolReplay pool(*allocator);
  std::map<std::size_t, ReplayBlock> labels;  // by offset: the taken blocks' ids
  HeuristicReplay r;
  r.heuristic = heuristic;
  r.pool_bytes = sequence.pool_bytes;
  r.start = frame_of(pool, labels, -1);
  r.frames.reserve(sequence.trace.size());
  for (std::size_t i = 0; i < sequence.trace.size(); ++i) {
    const TraceEvent& e = sequence.trace[i];
    const int event = static_cast<int>(i);
    std::optional<std::size_t> placed;
    bool failed = false, skipped = false;
    if (e.kind == TraceEvent::Kind::free) {
      if (!pool.live(e.id)) {
        skipped = true;  // its alloc failed: nothing to give back
      } else {
        const std::size_t offset = pool.block_of(e.id).offset;
        pool.free(e.id, event, e.after_copy);
        if (!pool.parked_at(offset)) labels.erase(offset);
      }
    } else {
      // The id doubles as the tensor id, as in tidepool::replay, so
      // smartpool can recognise a repeated sequence.
      const int tensor = e.id >= 0 && e.id <= INT_MAX ? static_cast<int>(e.id) : -1;
      placed = pool.place(e.id, {e.bytes, tensor, e.role, e.will_offload, e.stream}, event);
      if (placed) {
        labels[*placed] = {e.id, *placed, round_up(e.bytes), e.will_offload};
      } else {
        failed = true;
        ++r.failures;
        if (r.first_failed_event < 0) r.first_failed_event = event;
      }
    }
    // Parked blocks given back meanwhile are no longer taken.
    for (auto it = labels.begin(); it != labels.end();)
      it = pool.taken().count(it->first) ? std::next(it) : labels.erase(it);
    ReplayFrame f = frame_of(pool, labels, event);
    f.placed_offset = placed;
    f.failed = failed;
    f.failed_request_bytes = failed ? round_up(e.bytes) : 0;
    f.skipped = skipped;
    r.frames.push_back(std::move(f));
  }
  r.peak_load_bytes = pool.figures().peak_load_bytes;
  r.footprint_bytes = pool.figures().footprint_bytes;
  r.competitive_ratio = competitive_ratio(r.footprint_bytes, r.peak_load_bytes);
  return r;
}

}  // namespace

FragmentationReplay replay_fragmentation(const PaperSequence& sequence, const std::vector<std::string>& heuristics) {
  validate(sequence.trace);
  FragmentationReplay out;
  out.sequence = sequence.name;
  out.unit_bytes = sequence.unit_bytes;
  out.pool_bytes = sequence.pool_bytes;
  out.event_labels = sequence.event_labels;
  out.heuristics.reserve(heuristics.size());
  for (const std::string& h : heuristics) out.heuristics.push_back(replay_one(sequence, h));
  return out;
}

}  // namespace tidepool::ui
