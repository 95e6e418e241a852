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

namespace tidepool::ui {
namespace {

// cnmem is the one heuristic with several pools; the registry names it so.
constexpr std::string_view kCnmem = "cnmem";

std::unique_ptr<Allocator> make_for(const PaperSequence& sequence, const std::string& heuristic) {
  if (heuristic == kCnmem && sequence.cnmem_initial_pool_bytes > 0)
    return make_cnmem_allocator(sequence.pool_bytes, sequence.cnmem_initial_pool_bytes);
  return make_allocator(heuristic, sequence.pool_bytes);
}

// One heuristic's pool as the replay sees it: the live blocks by offset and,
// for cnmem, the ends of the pools it has claimed.
class PoolView {
 public:
  PoolView(std::string heuristic, std::size_t pool_bytes)
      : heuristic_(std::move(heuristic)), pool_bytes_(pool_bytes), multi_pool_(heuristic_ == kCnmem) {}

  // Records a block the allocator returned, after checking it against the
  // pool and the live blocks: a drawing of overlapping blocks would teach
  // the wrong thing, so a policy that produced one is a bug worth stopping on.
  void place(const ReplayBlock& b, int event) {
    auto fail = [&](const std::string& what) {
      throw std::logic_error("replay_fragmentation: " + heuristic_ + " placed block " + std::to_string(b.id) +
                             " at event " + std::to_string(event) + " " + what);
    };
    if (b.offset % kAllocGranularity != 0) fail("on an unaligned offset");
    if (b.end() > pool_bytes_) fail("past the end of the pool");
    const auto next = live_.lower_bound(b.offset);
    if (next != live_.end() && next->first < b.end()) fail("over block " + std::to_string(next->second.id));
    if (next != live_.begin() && std::prev(next)->second.end() > b.offset)
      fail("over block " + std::to_string(std::prev(next)->second.id));
    live_.emplace(b.offset, b);
    load_ += b.bytes;
  }

  void remove(std::size_t offset) {
    const auto it = live_.find(offset);
    load_ -= it->second.bytes;
    live_.erase(it);
  }

  // cnmem's stats() extent is the end of its last pool: it grows by one
  // pool per request that did not fit, and falls back to the initial pool
  // (or to nothing) when the last live block goes, every pool given back.
  void track_pools(std::size_t extent) {
    if (!multi_pool_) return;
    if (!pool_ends_.empty() && extent < pool_ends_.back()) pool_ends_.clear();
    if (extent > 0 && (pool_ends_.empty() || extent > pool_ends_.back())) pool_ends_.push_back(extent);
  }

  ReplayFrame frame(int event, const PoolStats& stats) const {
    ReplayFrame f;
    f.event = event;
    f.live.reserve(live_.size());
    for (const auto& [offset, block] : live_) f.live.push_back(block);
    f.load_bytes = load_;
    f.extent_bytes = stats.extent_bytes;
    f.largest_free_block_bytes = stats.largest_free_block_bytes;
    if (!pool_ends_.empty()) f.pool_boundaries.assign(pool_ends_.begin(), pool_ends_.end() - 1);
    f.largest_free_below_extent_bytes =
        std::min(largest_free_below(stats.extent_bytes, f.pool_boundaries),
                 stats.extent_bytes > load_ ? stats.extent_bytes - load_ : 0);
    return f;
  }

 private:
  // The largest range of [0, limit) that no live block covers and no pool
  // boundary crosses.
  std::size_t largest_free_below(std::size_t limit, const std::vector<std::size_t>& boundaries) const {
    std::size_t largest = 0;
    auto consider = [&](std::size_t from, std::size_t to) {
      to = std::min(to, limit);
      if (to <= from) return;
      // Split at the pool boundaries inside the range.
      for (std::size_t b : boundaries) {
        if (b <= from || b >= to) continue;
        largest = std::max(largest, b - from);
        from = b;
      }
      largest = std::max(largest, to - from);
    };
    std::size_t cursor = 0;
    for (const auto& [offset, block] : live_) {
      consider(cursor, offset);
      cursor = std::max(cursor, block.end());
    }
    consider(cursor, limit);
    return largest;
  }

  std::string heuristic_;
  std::size_t pool_bytes_;
  bool multi_pool_;
  std::map<std::size_t, ReplayBlock> live_;  // by offset
  std::size_t load_ = 0;
  std::vector<std::size_t> pool_ends_;
};

HeuristicReplay replay_one(const PaperSequence& sequence, const std::string& heuristic) {
  const std::unique_ptr<Allocator> allocator = make_for(sequence, heuristic);
  HeuristicReplay r;
  r.heuristic = heuristic;
  r.pool_bytes = sequence.pool_bytes;
  PoolView pool(heuristic, sequence.pool_bytes);
  pool.track_pools(allocator->stats().extent_bytes);
  r.start = pool.frame(-1, allocator->stats());

  std::unordered_map<std::int64_t, std::size_t> offset_of;  // placed ids only
  r.frames.reserve(sequence.trace.size());
  for (std::size_t i = 0; i < sequence.trace.size(); ++i) {
    const TraceEvent& e = sequence.trace[i];
    const int event = static_cast<int>(i);
    std::optional<std::size_t> placed;
    bool failed = false, skipped = false;
    if (e.kind == TraceEvent::Kind::free) {
      const auto it = offset_of.find(e.id);
      if (it == offset_of.end()) {
        skipped = true;  // its alloc failed: nothing to give back
      } else {
        allocator->free(it->second);
        pool.remove(it->second);
        offset_of.erase(it);
      }
    } else {
      // The id doubles as the tensor id, as in tidepool::replay, so
      // smartpool can recognise a repeated sequence.
      const int tensor = e.id >= 0 && e.id <= INT_MAX ? static_cast<int>(e.id) : -1;
      placed = allocator->allocate({e.bytes, tensor, Role::activation, e.will_offload});
      if (placed) {
        pool.place({e.id, *placed, round_up(e.bytes), e.will_offload}, event);
        offset_of.emplace(e.id, *placed);
      } else {
        failed = true;
        ++r.failures;
        if (r.first_failed_event < 0) r.first_failed_event = event;
      }
    }
    const PoolStats stats = allocator->stats();
    pool.track_pools(stats.extent_bytes);
    ReplayFrame f = pool.frame(event, stats);
    f.placed_offset = placed;
    f.failed = failed;
    f.failed_request_bytes = failed ? round_up(e.bytes) : 0;
    f.skipped = skipped;
    r.frames.push_back(std::move(f));
  }
  const PoolStats end = allocator->stats();
  r.peak_load_bytes = end.peak_load_bytes;
  r.footprint_bytes = end.peak_extent_bytes;
  r.competitive_ratio = end.competitive_ratio();
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
