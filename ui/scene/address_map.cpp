#include "ui/scene/address_map.h"

#include <algorithm>
#include <map>

#include "engine/core/bytes_text.h"
#include "ui/scene/generation.h"

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
  map.generation = next_scene_generation();
  if (!complete(events, iteration)) return map;
  const IterationSummary* summary = nullptr;
  for (const auto& it : events.iterations)
    if (it.iteration == iteration) summary = &it;
  int steps = 0;
  for (const auto& e : events.allocs)
    if (e.iteration == iteration) steps = std::max(steps, e.step + 1);
  for (const auto& e : events.spans)
    if (e.iteration == iteration) steps = std::max(steps, e.step + 1);
  if (steps == 0 || !summary) return map;
  map.iteration = iteration;
  map.steps = steps;
  map.peak_step = std::max(summary->peak_step, 0);
  map.peak_load_bytes = summary->peak_load_bytes;
  map.footprint_bytes = summary->footprint_bytes;
  if (summary->largest_free_at_peak.bytes)
    map.largest_free_at_peak = MapHole{summary->largest_free_at_peak.offset, summary->largest_free_at_peak.bytes};
  map.after_step.assign(static_cast<std::size_t>(steps), StepPool{});
  for (const auto& l : events.loads)
    if (l.iteration == iteration && l.step >= 0 && l.step < steps)
      map.after_step[static_cast<std::size_t>(l.step)] = {l.load_bytes, l.extent_bytes, l.largest_free_bytes};
  for (std::size_t i = 1; i < map.after_step.size(); ++i)
    if (map.after_step[i].extent_bytes == 0) map.after_step[i] = map.after_step[i - 1];

  std::map<std::size_t, std::size_t> live;    // offset -> index into blocks
  std::map<std::size_t, std::size_t> parked;  // offset -> index: dead, still taken
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
    if (e.action == PoolAction::give_back) {
      unpark(e.offset, e.step);
      continue;
    }
    if (e.is_free()) {
      auto it = live.find(e.offset);
      if (it == live.end()) continue;  // freed twice or placed before the snapshot: skip
      map.blocks[it->second].last_step = e.step;
      if (e.action == PoolAction::park) {
        map.blocks[it->second].parked_until_step = steps - 1;  // until given back
        parked[e.offset] = it->second;
      }
      live.erase(it);
      continue;
    }
    unpark(e.offset, e.step);  // a tensor placed in its own parked block
    alloc(e, false);
  }

  // The holes between the blocks taken at the peak, below the extent then.
  const Occupancy at_peak = occupancy_at(map, map.peak_step);
  const std::size_t extent_at_peak = map.after_step[static_cast<std::size_t>(map.peak_step)].extent_bytes;
  for (const MapHole& h : at_peak.holes)
    if (h.offset < extent_at_peak) map.holes_at_peak.push_back({h.offset, std::min(h.bytes, extent_at_peak - h.offset)});

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
  std::vector<const MapBlock*> taken = o.live;
  taken.insert(taken.end(), o.parked.begin(), o.parked.end());
  std::sort(taken.begin(), taken.end(), by_offset);
  std::size_t extent = 0;
  for (const MapBlock* b : taken) extent = std::max(extent, b->end());
  o.holes = holes_between(taken, std::max(map.pool_bytes, extent));
  return o;
}

std::vector<const MapBlock*> largest_at_peak(const AddressMapScene& map, std::size_t n) {
  std::vector<const MapBlock*> live = occupancy_at(map, map.peak_step).live;
  std::stable_sort(live.begin(), live.end(), [](const MapBlock* a, const MapBlock* b) {
    return a->bytes != b->bytes ? a->bytes > b->bytes : a->offset < b->offset;
  });
  if (live.size() > n) live.resize(n);
  return live;
}

const MapBlock* find_block(const AddressMapScene& map, const BlockKey& key) {
  for (const MapBlock& b : map.blocks)
    if (key_of(b) == key) return &b;
  return nullptr;
}

bool name_matches(const MapBlock& b, std::string_view search) {
  if (search.empty()) return false;
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  const auto it = std::search(b.name.begin(), b.name.end(), search.begin(), search.end(),
                              [&](char a, char c) { return lower(a) == lower(c); });
  return it != b.name.end();
}

std::vector<std::string> block_details(const MapBlock& b, bool traced) {
  std::vector<std::string> lines{b.name.empty() ? std::string("(no frames)") : b.name};
  if (!traced) {
    lines.push_back("layer     " + b.name.substr(0, b.name.find('.')));
    lines.push_back("role      " + std::string(to_string(b.role)));
  }
  lines.push_back("offset    " + format_bytes(b.offset) + " (" + std::to_string(b.offset) + ")");
  lines.push_back("size      " + format_bytes(b.bytes));
  lines.push_back(b.persistent ? "lifetime  the whole run (placed once)"
                               : std::string(traced ? "lifetime  events " : "lifetime  steps ") +
                                     std::to_string(b.first_step) + " to " + std::to_string(b.last_step));
  if (b.offload_step >= 0) lines.push_back("offloaded from step " + std::to_string(b.offload_step));
  if (b.prefetch_done_step >= 0) lines.push_back("prefetched, back by step " + std::to_string(b.prefetch_done_step));
  if (b.parked_until_step > b.last_step)
    lines.push_back("parked steps " + std::to_string(b.last_step + 1) + " to " + std::to_string(b.parked_until_step) +
                    ": dead, but kept from reuse while its copy to the host runs");
  return lines;
}

}  // namespace tidepool::ui
