#include "ui/scene/address_map.h"

#include <algorithm>
#include <map>

namespace tidepool::ui {
namespace {

// Holes between `live` blocks (sorted by offset) below `limit`.
std::vector<MapHole> holes_between(const std::vector<const MapBlock*>& live, std::size_t limit) {
  std::vector<MapHole> holes;
  std::size_t at = 0;
  for (const MapBlock* b : live) {
    if (b->offset > at) holes.push_back({at, b->offset - at});
    at = std::max(at, b->end());
  }
  if (limit > at) holes.push_back({at, limit - at});
  return holes;
}

bool complete(const RingSnapshot& events, std::int64_t iteration) {
  // The ring holds events oldest first: if something older than the
  // iteration is still there, none of the iteration's events was dropped.
  if (events.dropped_allocs == 0) return true;
  return !events.allocs.empty() && events.allocs.front().iteration < iteration;
}

}  // namespace

AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes) {
  for (auto it = events.iterations.rbegin(); it != events.iterations.rend(); ++it)
    if (complete(events, it->iteration)) return build_address_map(events, pool_bytes, it->iteration);
  AddressMapScene empty;
  empty.pool_bytes = pool_bytes;
  return empty;
}

AddressMapScene build_address_map(const RingSnapshot& events, std::size_t pool_bytes,
                                  std::int64_t iteration) {
  AddressMapScene map;
  map.pool_bytes = pool_bytes;
  if (!complete(events, iteration)) return map;
  int steps = 0;
  for (const auto& e : events.allocs)
    if (e.iteration == iteration) steps = std::max(steps, e.step + 1);
  for (const auto& e : events.spans)
    if (e.iteration == iteration) steps = std::max(steps, e.step + 1);
  if (steps == 0) return map;
  map.iteration = iteration;
  map.steps = steps;

  std::map<std::size_t, std::size_t> live;    // offset -> index into blocks
  std::map<std::size_t, std::size_t> parked;  // offset -> index: dead, still taken
  std::size_t load = 0, extent_max = 0;
  bool peak_seen = false;
  std::vector<std::size_t> at_peak;  // block indices live at the peak
  auto alloc = [&](const AllocEvent& e, bool persistent) {
    MapBlock b;
    b.tensor = e.tensor;
    b.name = e.name;
    b.role = e.role;
    b.offset = e.offset;
    b.bytes = e.bytes;
    b.persistent = persistent;
    b.first_step = persistent ? 0 : e.step;
    b.last_step = steps - 1;
    live[e.offset] = map.blocks.size();
    map.blocks.push_back(std::move(b));
    load += e.bytes;
  };
  // A parked block stays taken until it is given back or its tensor is
  // placed in it again, both before that step's work.
  auto unpark = [&](std::size_t offset, int step) {
    auto it = parked.find(offset);
    if (it == parked.end()) return;
    MapBlock& b = map.blocks[it->second];
    b.parked_until_step = std::max(step - 1, b.last_step);
    parked.erase(it);
  };
  for (const auto& e : events.placement)
    if (!e.is_free()) alloc(e, true);
  for (const auto& e : events.allocs) {
    if (e.iteration != iteration) continue;
    if (e.action == AllocAction::give_back) {
      unpark(e.offset, e.step);
      continue;
    }
    if (e.is_free()) {
      auto it = live.find(e.offset);
      if (it == live.end()) continue;  // freed twice or placed before the snapshot: skip
      map.blocks[it->second].last_step = e.step;
      load -= map.blocks[it->second].bytes;
      if (e.action == AllocAction::park) {
        map.blocks[it->second].parked_until_step = steps - 1;  // until given back
        parked[e.offset] = it->second;
      }
      live.erase(it);
      continue;
    }
    unpark(e.offset, e.step);  // a tensor placed in its own parked block
    alloc(e, false);
    if (!live.empty()) {
      const MapBlock& top = map.blocks[std::prev(live.end())->second];
      extent_max = std::max(extent_max, top.end());
    }
    if (!peak_seen || load > map.peak_load_bytes) {
      peak_seen = true;
      map.peak_load_bytes = load;
      map.peak_step = e.step;
      at_peak.clear();
      for (const auto& [offset, index] : live) at_peak.push_back(index);
      for (const auto& [offset, index] : parked) at_peak.push_back(index);  // taken, though dead
    }
  }
  for (const auto& [offset, index] : live) extent_max = std::max(extent_max, map.blocks[index].end());
  for (const auto& [offset, index] : parked) extent_max = std::max(extent_max, map.blocks[index].end());
  // The allocator's own extent can lie above every live block: cnmem's is
  // the end of the pools it claimed, and those stay claimed from earlier
  // iterations. The load samples carry it; the map shows that footprint.
  std::size_t extent_at_peak = 0;
  for (const auto& l : events.loads) {
    if (l.iteration != iteration) continue;
    extent_max = std::max(extent_max, l.extent_bytes);
    if (l.step == map.peak_step) extent_at_peak = std::max(extent_at_peak, l.extent_bytes);
  }
  map.footprint_bytes = extent_max;

  // The holes below the extent when the load peaked.
  std::vector<const MapBlock*> peak_blocks;
  for (std::size_t i : at_peak) peak_blocks.push_back(&map.blocks[i]);
  std::sort(peak_blocks.begin(), peak_blocks.end(),
            [](const MapBlock* a, const MapBlock* b) { return a->offset < b->offset; });
  std::size_t peak_extent = extent_at_peak;
  for (const MapBlock* b : peak_blocks) peak_extent = std::max(peak_extent, b->end());
  map.holes_at_peak = holes_between(peak_blocks, peak_extent);
  for (const MapHole& h : map.holes_at_peak)
    if (!map.largest_free_at_peak || h.bytes > map.largest_free_at_peak->bytes) map.largest_free_at_peak = h;

  // Transfers: an offload runs from its step until the block is freed; a
  // prefetched block is in flight from its placement until the first
  // compute work that starts after the copy ended.
  std::vector<std::pair<double, int>> compute_starts;  // (start time, step)
  for (const auto& e : events.spans)
    if (e.iteration == iteration && e.stream == Stream::compute) compute_starts.emplace_back(e.start_us, e.step);
  std::sort(compute_starts.begin(), compute_starts.end());
  auto block_named = [&](const std::string& name, int step) -> MapBlock* {
    for (MapBlock& b : map.blocks)
      if (!b.persistent && b.name == name && b.first_step <= step && step <= b.last_step) return &b;
    return nullptr;
  };
  for (const auto& e : events.spans) {
    if (e.iteration != iteration) continue;
    if (e.kind == SpanKind::offload) {
      if (MapBlock* b = block_named(e.tensor, e.step)) b->offload_step = e.step;
    } else if (e.kind == SpanKind::prefetch) {
      if (MapBlock* b = block_named(e.tensor, e.step)) {
        auto next = std::lower_bound(compute_starts.begin(), compute_starts.end(),
                                     std::make_pair(e.end_us, -1));
        b->prefetch_done_step = next == compute_starts.end() ? b->last_step : std::min(next->second, b->last_step);
        b->prefetch_done_step = std::max(b->prefetch_done_step, b->first_step);
      }
    }
  }
  return map;
}

Occupancy occupancy_at(const AddressMapScene& map, int step) {
  Occupancy o;
  o.step = step;
  o.pool_bytes = map.pool_bytes;
  for (const MapBlock& b : map.blocks) {
    if (b.first_step <= step && step <= b.last_step) o.live.push_back(&b);
    if (b.parked_at(step)) o.parked.push_back(&b);
  }
  const auto by_offset = [](const MapBlock* a, const MapBlock* b) { return a->offset < b->offset; };
  std::sort(o.live.begin(), o.live.end(), by_offset);
  for (const MapBlock* b : o.live) o.load_bytes += b->bytes;
  std::vector<const MapBlock*> taken = o.live;
  taken.insert(taken.end(), o.parked.begin(), o.parked.end());
  std::sort(taken.begin(), taken.end(), by_offset);
  for (const MapBlock* b : taken) o.extent_bytes = std::max(o.extent_bytes, b->end());
  o.holes = holes_between(taken, std::max(map.pool_bytes, o.extent_bytes));
  for (const MapHole& h : o.holes)
    if (h.offset + h.bytes <= o.extent_bytes) o.largest_hole_bytes = std::max(o.largest_hole_bytes, h.bytes);
  return o;
}

}  // namespace tidepool::ui
