#include "engine/memory/replay.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <stdexcept>

#include "engine/core/fnv1a.h"
#include "engine/memory/replay_memo.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

const char* to_string(PoolAction a) {
  switch (a) {
    case PoolAction::place: return "alloc";
    case PoolAction::free: return "free";
    case PoolAction::park: return "park";
    case PoolAction::give_back: return "give back";
  }
  return "?";
}


PoolReplay::PoolReplay(Allocator& allocator, int park_horizon, PoolObserver* observer)
    : allocator_(allocator), parking_(allocator, park_horizon), observer_(observer) {
  start_iteration();
}

void PoolReplay::start_iteration() {
  figures_ = {};
  const PoolStats now = stats();
  figures_.footprint_bytes = now.extent_bytes;
  note_peak(now, -1);
}

void PoolReplay::note_peak(const PoolStats& now, int event) {
  figures_.peak_load_bytes = load_;
  figures_.peak_event = event;
  figures_.largest_free_at_peak = largest_free_below_extent(now);
  figures_.peak_load_by_role = load_by_role_;
  // Every taken byte lies below the extent, so what is neither live nor
  // parked there is free; the guard only keeps a policy that reported a
  // short extent from wrapping round (the tests check the sum).
  const std::size_t parked = parking_.parked_bytes();
  figures_.parked_at_peak_bytes = parked;
  figures_.holes_at_peak_bytes = now.extent_bytes - std::min(now.extent_bytes, load_ + parked);
}

// The overlap check and the gaps between taken blocks, kept as blocks come
// and go: a block must lie on the granularity, inside the pool and over no
// taken byte.
void PoolReplay::take(std::size_t offset, std::size_t bytes) {
  const std::size_t pool = allocator_.stats().pool_bytes;
  const auto fail = [&](const std::string& what) {
    throw std::logic_error("allocator '" + std::string(allocator_.name()) + "' placed [" + std::to_string(offset) +
                           ", +" + std::to_string(bytes) + ") " + what);
  };
  if (offset % kAllocGranularity != 0) fail("at an offset that is not a multiple of " + std::to_string(kAllocGranularity));
  if (offset > pool || bytes > pool - offset) fail("past the end of its " + std::to_string(pool) + "-byte pool");
  const auto next = taken_.lower_bound(offset);
  if (next != taken_.end() && next->first < offset + bytes)
    fail("over the block at " + std::to_string(next->first));
  std::size_t prev_end = 0;
  if (next != taken_.begin()) {
    prev_end = std::prev(next)->second;
    if (prev_end > offset) fail("over the block at " + std::to_string(std::prev(next)->first));
  }
  if (next != taken_.end()) gaps_.erase({next->first - prev_end, prev_end});
  if (offset > prev_end) gaps_.insert({offset - prev_end, prev_end});
  if (next != taken_.end() && next->first > offset + bytes) gaps_.insert({next->first - (offset + bytes), offset + bytes});
  taken_.emplace_hint(next, offset, offset + bytes);
}

void PoolReplay::release(std::size_t offset) {
  const auto it = taken_.find(offset);
  const std::size_t end = it->second;
  const auto next = std::next(it);
  const std::size_t prev_end = it == taken_.begin() ? 0 : std::prev(it)->second;
  if (offset > prev_end) gaps_.erase({offset - prev_end, prev_end});
  if (next != taken_.end()) {
    if (next->first > end) gaps_.erase({next->first - end, end});
    gaps_.insert({next->first - prev_end, prev_end});
  }
  taken_.erase(it);
}

Range PoolReplay::largest_free_below_extent(const PoolStats& now) const {
  const std::size_t extent = now.extent_bytes;
  if (extent <= load_) return {};
  // Candidates: the gaps between taken blocks, and the top one between the
  // highest taken byte and the extent (cnmem's last pool); none may cross
  // a pool boundary, and none lies above the extent.
  const std::span<const std::size_t> boundaries = allocator_.pool_starts();
  Range best;
  auto consider = [&](std::size_t from, std::size_t to) {
    to = std::min(to, extent);
    if (to <= from) return;
    auto b = std::upper_bound(boundaries.begin(), boundaries.end(), from);
    for (; b != boundaries.end() && *b < to; ++b) {
      if (*b - from > best.bytes) best = {from, *b - from};
      from = *b;
    }
    if (to - from > best.bytes) best = {from, to - from};
  };
  const std::size_t top = taken_.empty() ? 0 : taken_.rbegin()->second;
  consider(top, extent);
  // Largest first: a gap no larger than the best piece so far cannot beat it.
  for (auto g = gaps_.rbegin(); g != gaps_.rend() && g->first > best.bytes; ++g) consider(g->second, g->second + g->first);
  best.bytes = std::min(best.bytes, extent - load_);
  return best;
}

void PoolReplay::report(PoolAction action, std::int64_t id, Range block, bool reclaimed, int event) {
  if (!observer_) return;
  const PoolStats s = stats();
  observer_->on_pool_event(
      {event, action, id, block, reclaimed, s.load_bytes, s.extent_bytes, largest_free_below_extent(s).bytes});
}

void PoolReplay::given_back(int event) {
  for (const Parking::Parked& p : parking_.released()) {
    parked_.erase(p.offset);
    release(p.offset);
    report(PoolAction::give_back, p.id, {p.offset, p.bytes}, false, event);
  }
}

std::optional<std::size_t> PoolReplay::place(std::int64_t id, const AllocRequest& request, int event) {
  if (live(id)) throw std::logic_error("block " + std::to_string(id) + " is placed twice");
  const std::size_t bytes = round_up(request.bytes);
  const auto offset = parking_.allocate(id, request);
  given_back(event);  // the parked blocks this placement needed, oldest first
  if (!offset) {
    failure_ = {bytes, stats().largest_free_block_bytes, allocator_.lacking_bytes(request)};
    return std::nullopt;
  }
  if (parking_.reclaimed())
    parked_.erase(*offset);  // its own block: still taken, live again
  else
    take(*offset, bytes);
  blocks_.emplace(id, LiveBlock{{*offset, bytes}, request.role});
  load_ += bytes;
  load_by_role_[static_cast<int>(request.role)] += bytes;
  const PoolStats s = stats();
  figures_.footprint_bytes = std::max(figures_.footprint_bytes, s.extent_bytes);
  if (load_ >= figures_.peak_load_bytes) note_peak(s, event);
  report(PoolAction::place, id, {*offset, bytes}, parking_.reclaimed(), event);
  return offset;
}

void PoolReplay::free(std::int64_t id, int event, bool after_copy) {
  const auto it = blocks_.find(id);
  if (it == blocks_.end()) throw std::logic_error("block " + std::to_string(id) + " is freed while not placed");
  const Range block = it->second.range;
  load_by_role_[static_cast<int>(it->second.role)] -= block.bytes;
  blocks_.erase(it);
  load_ -= block.bytes;
  if (after_copy && parking_.horizon() > 0) {
    parked_.insert(block.offset);
    parking_.free_after_copy(id, block.offset, block.bytes);
    report(PoolAction::park, id, block, false, event);
    given_back(event);  // beyond the horizon
  } else {
    parking_.free(block.offset);
    release(block.offset);
    report(PoolAction::free, id, block, false, event);
  }
}

namespace {

// Events [from, end) of a trace into a loop that has placed those before.
TraceReplay replay_events(const AllocTrace& trace, PoolReplay& pool, std::size_t from) {
  TraceReplay r;
  for (std::size_t i = from; i < trace.size(); ++i) {
    const TraceEvent& e = trace[i];
    const int event = e.step != kNoStep ? e.step : static_cast<int>(i);
    if (e.kind == TraceEvent::Kind::free) {
      pool.free(e.id, event, e.after_copy);
      continue;
    }
    const int tensor = e.id >= 0 && e.id <= INT_MAX ? static_cast<int>(e.id) : -1;
    if (!pool.place(e.id, {e.bytes, tensor, e.role, e.will_offload, e.stream}, event)) {
      r.fits = false;
      r.failed_event = static_cast<int>(i);
      r.failure = pool.failure();
      break;
    }
  }
  r.stats = pool.stats();
  r.figures = pool.figures();
  return r;
}

}  // namespace

TraceReplay replay(const AllocTrace& trace, PoolReplay& pool) {
  pool.start_iteration();
  return replay_events(trace, pool, 0);
}

TraceReplay resume_replay(const AllocTrace& trace, PoolReplay& pool, std::size_t from) {
  return replay_events(trace, pool, from);
}

TraceReplay replay(const AllocTrace& trace, Allocator& allocator, int park_horizon, PoolObserver* observer) {
  validate(trace);
  PoolReplay pool(allocator, park_horizon, observer);
  return replay(trace, pool);
}

ScheduleTraces::ScheduleTraces(const Schedule& s)
    : first(trace_of(s, 1, /*with_persistent=*/true)),
      steady(trace_of(s, 1, /*with_persistent=*/false)),
      fingerprint(tidepool::fingerprint(steady, tidepool::fingerprint(first, kFnv1aStart))) {}

ScheduleReplay replay_schedule(const ScheduleTraces& traces, std::string_view heuristic, std::size_t pool_bytes,
                               int park_horizon, PoolObserver* observer) {
  const MemoRequests requests{{&traces.first, &traces.steady}, traces.fingerprint};
  if (!observer)
    if (std::optional<ScheduleReplay> kept = find_schedule_replay(requests, heuristic, pool_bytes, park_horizon))
      return *kept;
  auto allocator = make_allocator(heuristic, pool_bytes);
  PoolReplay pool(*allocator, park_horizon, observer);
  ScheduleReplay r;
  r.pool_bytes = pool_bytes;
  r.first = replay(traces.first, pool);
  if (r.first.fits) r.steady = replay(traces.steady, pool);
  if (!r.fits()) r.fails_alike_to = fails_alike_to(*allocator, pool_bytes);
  if (!observer) keep_schedule_replay(requests, heuristic, pool_bytes, park_horizon, r);
  return r;
}

ScheduleReplay replay_schedule(const Schedule& s, std::string_view heuristic, std::size_t pool_bytes,
                               int park_horizon, PoolObserver* observer) {
  return replay_schedule(ScheduleTraces(s), heuristic, pool_bytes, park_horizon, observer);
}

}  // namespace tidepool
