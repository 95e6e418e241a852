// pytorch: PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator) by its documented rules, so that a PyTorch run's
// trace can be compared with every other policy. Names in parentheses are
// the functions there each rule comes from.
//
//   - Rounding (round_size): every request rounds up to a multiple of
//     kMinBlockSize (512 B), at least one.
//   - Pools (get_pool): requests up to kSmallSize (1 MiB) are served from
//     the small pool, larger ones from the large pool; each pool keeps its
//     cached free blocks per stream (AllocRequest::stream), and a block is
//     never reused by another stream or pool.
//   - Best fit (get_free_block): the smallest cached block of the stream
//     and pool that holds the request, the lowest address among equals.
//     With max_split_size set, a block of at least that size is not given
//     to a smaller request, nor to a larger one it exceeds by
//     max_non_split_rounding (20 MiB) or more.
//   - New segments (get_allocation_size, alloc_block): when no cached block
//     serves, a segment is "cudaMalloc'd": kSmallBuffer (2 MiB) for a small
//     request, kLargeBuffer (20 MiB) below kMinLargeAlloc (10 MiB), else
//     the request rounded up to kRoundLarge (2 MiB).
//   - Splitting (should_split): the block taken is split when the rest is
//     at least kMinBlockSize in the small pool (or with expandable
//     segments), more than kSmallSize in the large pool and only for a
//     request below max_split_size; otherwise the request takes the whole
//     block. A freed block merges with free neighbours of its segment
//     (free_block, try_merge_blocks) and stays cached: segments are never
//     given back while a request can be served.
//   - Before failing (malloc): with max_split_size set, cached oversize
//     segments of the stream and pool are freed, the smallest one large
//     enough or else the largest until enough (release_available_cached_blocks),
//     and the segment tried again; then every wholly free cached segment
//     of every stream and pool (release_cached_blocks), and tried again.
//   - expandable_segments:True (try_allocate_expandable_block): one segment
//     per stream and pool that grows by mapping pages (kSmallBuffer in the
//     small pool, kLargeBuffer in the large) at its end, the free block at
//     the end counting towards the request; a cached block at the growing
//     end is taken only when no other cached block fits (get_free_block's
//     expandable size). release_cached_blocks unmaps the wholly free pages
//     at the end, and gives the segment back when none is left.
//
// What is Tidepool's, not PyTorch's:
//   - Addresses. PyTorch gets its segments from cudaMalloc (or reserves a
//     virtual range per expandable segment); here they lie in the one
//     arena [0, pool). A segment goes to the lowest free range of the
//     arena that holds it (first fit, as a fresh device's cudaMalloc tends
//     to place them); an expandable segment grows in place, a large pool's
//     upwards from the lowest free range and a small pool's downwards from
//     the highest, so with one stream the two only meet when the arena is
//     full (another stream's start in the middle of the largest free
//     range). Only the reserved bytes, which segments exist and which cached
//     blocks serve which request are PyTorch's. A segment also needs a
//     contiguous range of the arena, where cudaMalloc maps pages: after
//     segments were freed in a bounded pool, a request can fail here that
//     the device would have served.
//   - Expandable segments unmap only the free pages at their growing end
//     (PyTorch also unmaps wholly free pages inside a free block in the
//     middle); several streams' expandable segments may run into each
//     other, which PyTorch's reserved address ranges never do.
//   - No events: a free is immediate (the replay loop's parking stands for
//     frees that wait on a copy), and process_events/recordStream have
//     nothing to do. Private pools (CUDA graphs), garbage_collection_threshold
//     and roundup_power2_divisions are not modelled.
//
// Figures, as engine/memory/replay.h defines them: the load is the bytes
// of the live requests each rounded up to kAllocGranularity, as for every
// policy (PyTorch's "allocated" also counts the 512-B rounding and
// unsplit rests, which show here as reserved but not loaded). The extent,
// and so the footprint, is the reserved bytes: every segment's size (an
// expandable segment's mapped pages), what torch.cuda.memory_reserved()
// reports. The largest free block is the largest request it could still
// serve: its largest cached block, or the largest request whose new
// segment the largest unreserved range of the arena holds. Segment
// boundaries are pool_starts(): no free range crosses a segment's edge.
#include <algorithm>
#include <compare>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/memory/allocators/free_list.h"
#include "engine/memory/allocators/pytorch.h"

namespace tidepool {

namespace pytorch {

std::size_t round_size(std::size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

std::size_t allocation_size(std::size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

}  // namespace pytorch

namespace {

using namespace pytorch;

// One cudaMalloc'd segment, or an expandable segment's mapped pages: a
// range of the arena, tiled by its blocks.
struct Segment {
  std::size_t begin = 0, end = 0;
  int stream = 0;
  bool small = false;
  bool expandable = false;
  bool grows_down = false;  // expandable, small pool: maps its new pages below
  std::size_t bytes() const { return end - begin; }
};

// A pool of cached blocks: PyTorch's small or large BlockPool, one stream's part of it.
struct PoolKey {
  int stream = 0;
  bool small = false;
  auto operator<=>(const PoolKey&) const = default;
};

struct SegmentBlock {
  std::size_t bytes = 0;
  int segment = 0;
  PoolKey pool;  // its segment's
  bool live = false;
  std::size_t load = 0;  // live: the request rounded up to kAllocGranularity
};

std::size_t whole_pages(std::size_t bytes, std::size_t page) { return (bytes + page - 1) / page * page; }

class PytorchAllocator final : public Allocator {
 public:
  PytorchAllocator(std::size_t pool_bytes, const PytorchAllocConf& conf)
      : arena_(pool_bytes), conf_(conf), unreserved_(pool_bytes) {}

  std::string_view name() const override { return "pytorch"; }

  std::optional<std::size_t> allocate(const AllocRequest& r) override {
    const std::size_t size = round_size(r.bytes);
    const PoolKey pool{r.stream, size <= kSmallSize};
    failed_claim_.reset();
    std::optional<std::size_t> block = cached_block(pool, size);
    if (!block) block = new_block(pool, size);
    if (!block) {
      // Here the pool's size decides: an arena longer by this much would
      // have held the segment at its end instead of releasing cached ones.
      const std::size_t claim = allocation_size(size);
      if (first_fit_segments()) miss_room_ = std::min(miss_room_, claim - unreserved_top());
      if (release_oversize(pool, size)) block = new_block(pool, size);
      if (!block) {
        release_cached();
        block = new_block(pool, size);
      }
      if (!block) {
        // And the caller may ask again (the replay loop gives back a
        // parked block and retries): an arena longer by this much would
        // have held it after the release.
        if (first_fit_segments()) miss_room_ = std::min(miss_room_, claim - unreserved_top());
        failed_claim_ = claim;
        return std::nullopt;
      }
    }
    return take(*block, size, pool, round_up(r.bytes));
  }

  void free(std::size_t offset) override {
    auto it = blocks_.find(offset);
    if (it == blocks_.end() || !it->second.live)
      throw std::logic_error("pytorch: free of offset " + std::to_string(offset) + ", which is not a live block");
    load_ -= it->second.load;
    it->second.live = false;
    it->second.load = 0;
    // try_merge_blocks: with the cached neighbours of the same segment.
    const auto next = std::next(it);
    if (next != blocks_.end() && mergeable(it, next)) {
      uncache(next);
      it->second.bytes += next->second.bytes;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      const auto prev = std::prev(it);
      if (mergeable(it, prev)) {
        uncache(prev);
        prev->second.bytes += it->second.bytes;
        blocks_.erase(it);
        it = prev;
      }
    }
    cache(it->first);
  }

  PoolStats stats() const override {
    PoolStats s;
    s.pool_bytes = arena_;
    s.load_bytes = load_;
    s.extent_bytes = reserved_;
    std::size_t cached_largest = 0, cached_count = 0;
    for (const auto& [key, blocks] : cached_)
      if (!blocks.empty()) {
        cached_largest = std::max(cached_largest, blocks.rbegin()->first);
        cached_count += blocks.size();
      }
    s.largest_free_block_bytes = std::max(cached_largest, largest_new_segment_request(unreserved_.largest()));
    s.free_holes = cached_count + unreserved_.count();
    return s;
  }

  std::span<const std::size_t> pool_starts() const override {
    if (boundaries_stale_) {
      boundaries_.clear();
      for (const auto& [edge, segments] : edges_)
        if (edge > 0 && edge < arena_) boundaries_.push_back(edge);
      boundaries_stale_ = false;
    }
    return boundaries_;
  }

  // Where segments are cudaMalloc's (first fit into the lowest range that
  // holds them, no oversize release), a larger arena's replay is this
  // one's with the unreserved range at the end longer by what it adds (or
  // a new one there): every segment goes to the same lowest range, and
  // every miss releases the same cached segments, until a miss whose
  // segment the longer end would have held, before the release or, for a
  // request that failed and was asked again (the replay loop gives back
  // parked blocks between), after it (miss_room_). Short of that,
  // the failed segment still fails after the release when the end's range
  // plus the added room cannot hold it, and lacks what lacking_bytes()
  // would say with that range so much longer.
  std::optional<std::size_t> lacking_in_pool(std::size_t pool_bytes) const override {
    if (!failed_claim_ || !first_fit_segments() || usable_pool(pool_bytes) <= arena_) return std::nullopt;
    const std::size_t more = usable_pool(pool_bytes) - arena_;
    const std::size_t top = unreserved_top() + more;
    if (more >= miss_room_ || top >= *failed_claim_) return 0;
    std::size_t room = top;
    for (const Block& b : unreserved_.blocks())
      if (b.end() != arena_) room = std::max(room, b.bytes);
    return *failed_claim_ - room;
  }

  // The arena a new segment (or an expandable segment's new pages) needed
  // beyond the largest unreserved range.
  std::size_t lacking_bytes(const AllocRequest& r) const override {
    const std::size_t size = round_size(r.bytes);
    const PoolKey pool{r.stream, size <= kSmallSize};
    std::size_t claim = allocation_size(size);
    if (conf_.expandable_segments) {
      std::size_t have = 0;
      if (const auto seg = expandable_.find(pool); seg != expandable_.end())
        if (const auto tail = growing_end_block(segments_.at(seg->second)); tail) have = blocks_.at(*tail).bytes;
      claim = size > have ? whole_pages(size - have, page_of(pool)) : 0;
    }
    const std::size_t room = unreserved_.largest();
    return claim > room ? claim - room : 0;
  }

 private:
  static std::size_t page_of(const PoolKey& pool) { return pool.small ? kSmallBuffer : kLargeBuffer; }

  // Segments go to the lowest unreserved range that holds them, and only
  // release_cached gives any back (no expandable segments, no oversize
  // release): what lacking_in_pool needs.
  bool first_fit_segments() const {
    return !conf_.expandable_segments && conf_.max_split_size_bytes == std::numeric_limits<std::size_t>::max();
  }

  // The unreserved range that ends at the arena's end, 0 when a segment does.
  std::size_t unreserved_top() const {
    const std::vector<Block>& free = unreserved_.blocks();
    return !free.empty() && free.back().end() == arena_ ? free.back().bytes : 0;
  }

  // The largest request a new segment (or fresh pages) in `room` bytes of
  // the arena would hold: what the rest of the pool can still serve.
  std::size_t largest_new_segment_request(std::size_t room) const {
    if (room < kSmallBuffer) return 0;
    if (conf_.expandable_segments) return room < kLargeBuffer ? kSmallSize : room / kLargeBuffer * kLargeBuffer;
    // From kMinLargeAlloc on a request's segment is itself rounded to
    // kRoundLarge (and from 20 MiB of room that beats every smaller one);
    // below, only a small segment fits.
    const std::size_t rounded = room / kRoundLarge * kRoundLarge;
    return rounded >= kMinLargeAlloc ? rounded : kSmallSize;
  }

  bool mergeable(std::map<std::size_t, SegmentBlock>::iterator a, std::map<std::size_t, SegmentBlock>::iterator b) const {
    return !b->second.live && b->second.segment == a->second.segment;
  }

  void cache(std::size_t offset) {
    const SegmentBlock& b = blocks_.at(offset);
    cached_[b.pool].insert({b.bytes, offset});
  }
  void uncache(std::map<std::size_t, SegmentBlock>::iterator it) {
    cached_[it->second.pool].erase({it->second.bytes, it->first});
  }

  // The cached block at an expandable segment's growing end, if there is one.
  std::optional<std::size_t> growing_end_block(const Segment& seg) const {
    if (!seg.expandable || seg.bytes() == 0) return std::nullopt;
    const auto it = seg.grows_down ? blocks_.find(seg.begin) : std::prev(blocks_.lower_bound(seg.end));
    if (it == blocks_.end() || it->second.live) return std::nullopt;
    return it->first;
  }
  bool at_growing_end(std::size_t offset) const {
    if (!conf_.expandable_segments) return false;
    const SegmentBlock& b = blocks_.at(offset);
    const Segment& seg = segments_.at(b.segment);
    if (!seg.expandable) return false;
    return seg.grows_down ? offset == seg.begin : offset + b.bytes == seg.end;
  }

  // Segment edges, counted (two segments may share one), for pool_starts().
  void add_edge(std::size_t at) {
    ++edges_[at];
    boundaries_stale_ = true;
  }
  void remove_edge(std::size_t at) {
    if (--edges_.at(at) == 0) edges_.erase(at);
    boundaries_stale_ = true;
  }
  void move_edge(std::size_t& edge, std::size_t to) {
    remove_edge(edge);
    edge = to;
    add_edge(edge);
  }

  // get_free_block: best fit among the stream's cached blocks of the pool.
  std::optional<std::size_t> cached_block(const PoolKey& pool, std::size_t size) {
    auto p = cached_.find(pool);
    if (p == cached_.end()) return std::nullopt;
    auto& blocks = p->second;
    auto it = blocks.lower_bound({size, 0});
    if (it == blocks.end()) return std::nullopt;
    // An expandable segment's end block counts as large as it can grow:
    // the next larger block is taken before it.
    if (at_growing_end(it->second) && std::next(it) != blocks.end()) ++it;
    const std::size_t bytes = it->first;
    if (size < conf_.max_split_size_bytes && bytes >= conf_.max_split_size_bytes) return std::nullopt;
    if (size >= conf_.max_split_size_bytes && bytes >= size + conf_.max_non_split_rounding_bytes) return std::nullopt;
    const std::size_t offset = it->second;
    blocks.erase(it);
    return offset;
  }

  // alloc_block: a new segment (or more pages) whose free block holds
  // `size`, not cached; nothing when the arena has no room for it.
  std::optional<std::size_t> new_block(const PoolKey& pool, std::size_t size) {
    if (conf_.expandable_segments) return grow_expandable(pool, size);
    const std::size_t bytes = allocation_size(size);
    const auto at = unreserved_.take_first_fit(bytes);
    if (!at) return std::nullopt;
    add_segment({*at, *at + bytes, pool.stream, pool.small, false, false});
    return *at;
  }

  // Adds a segment wholly free, as one block (not cached: its first
  // request takes it at once).
  int add_segment(const Segment& seg) {
    const int id = next_segment_++;
    segments_.emplace(id, seg);
    blocks_[seg.begin] = {seg.bytes(), id, {seg.stream, seg.small}, false, 0};
    reserved_ += seg.bytes();
    add_edge(seg.begin);
    add_edge(seg.end);
    return id;
  }

  std::optional<std::size_t> grow_expandable(const PoolKey& pool, std::size_t size) {
    const std::size_t page = page_of(pool);
    const auto found = expandable_.find(pool);
    if (found == expandable_.end()) {
      const std::size_t bytes = whole_pages(size, page);
      const bool down = pool.small;
      const auto at = place_expandable(bytes, down);
      if (!at) return std::nullopt;
      expandable_[pool] = add_segment({*at, *at + bytes, pool.stream, pool.small, true, down});
      return *at;
    }
    const int id = found->second;
    Segment& seg = segments_.at(id);
    const std::optional<std::size_t> tail = growing_end_block(seg);
    const std::size_t have = tail ? blocks_.at(*tail).bytes : 0;
    if (tail && have >= size) {  // held back by the oversize rules only: find_expandable_block takes it
      uncache(blocks_.find(*tail));
      return tail;
    }
    const std::size_t bytes = whole_pages(size - have, page);
    if (seg.grows_down && seg.begin < bytes) return std::nullopt;
    const std::size_t from = seg.grows_down ? seg.begin - bytes : seg.end;
    if (!unreserved_.take_at(from, bytes)) return std::nullopt;  // another segment is in the way
    reserved_ += bytes;
    // map_block: the new pages merge with the free block at the end.
    std::size_t begin = from, end = from + bytes;
    if (tail) {
      const auto t = blocks_.find(*tail);
      uncache(t);
      begin = std::min(begin, t->first);
      end = std::max(end, t->first + t->second.bytes);
      blocks_.erase(t);
    }
    move_edge(seg.grows_down ? seg.begin : seg.end, seg.grows_down ? from : from + bytes);
    blocks_[begin] = {end - begin, id, pool, false, 0};
    return begin;
  }

  // Where a new expandable segment's first pages go. The first that grows
  // up takes the lowest free range, the first that grows down the
  // highest, so one stream's two segments meet only when the pool is full;
  // a later one (another stream's) starts in the middle of the largest
  // free range, leaving half of it to whatever grows towards it.
  std::optional<std::size_t> place_expandable(std::size_t bytes, bool down) {
    bool first = true;
    for (const auto& [pool, id] : expandable_) first = first && segments_.at(id).grows_down != down;
    if (first) return down ? unreserved_.take_highest(bytes) : unreserved_.take_first_fit(bytes);
    Block widest;
    for (const Block& b : unreserved_.blocks())
      if (b.bytes > widest.bytes) widest = b;
    if (widest.bytes < bytes) return std::nullopt;
    const std::size_t middle = widest.offset + (widest.bytes / 2) / kAllocGranularity * kAllocGranularity;
    const std::size_t at = down ? std::max(widest.offset, middle - std::min(middle, bytes))
                                : std::min(middle, widest.end() - bytes);
    unreserved_.take_at(at, bytes);
    return at;
  }

  // alloc_found_block with should_split: the request takes `size` of the
  // free block at `offset`, or all of it.
  std::size_t take(std::size_t offset, std::size_t size, const PoolKey& pool, std::size_t load) {
    SegmentBlock& b = blocks_.at(offset);
    const std::size_t rest = b.bytes - size;
    const bool split = pool.small || conf_.expandable_segments
                           ? rest >= kMinBlockSize
                           : size < conf_.max_split_size_bytes && rest > kSmallSize;
    std::size_t at = offset;
    if (split) {
      // The rest stays on the growing side of a downward segment, as it
      // does on the high side of every other.
      const int id = b.segment;
      if (conf_.expandable_segments && segments_.at(id).grows_down) {
        at = offset + rest;
        b.bytes = rest;
        blocks_[at] = {size, id, pool, false, 0};
        cache(offset);
      } else {
        b.bytes = size;
        blocks_[offset + size] = {rest, id, pool, false, 0};
        cache(offset + size);
      }
    }
    SegmentBlock& taken = blocks_.at(at);
    taken.live = true;
    taken.load = load;
    load_ += load;
    return at;
  }

  bool whole_free_segment(std::size_t offset) const {
    const SegmentBlock& b = blocks_.at(offset);
    const Segment& seg = segments_.at(b.segment);
    return !b.live && !seg.expandable && seg.begin == offset && seg.bytes() == b.bytes;
  }

  // release_block: cudaFree of a wholly free, cached segment.
  void release_segment(std::size_t offset) {
    const auto it = blocks_.find(offset);
    uncache(it);
    const int id = it->second.segment;
    const Segment& seg = segments_.at(id);
    unreserved_.give_back(seg.begin, seg.bytes());
    reserved_ -= seg.bytes();
    blocks_.erase(it);
    remove_edge(seg.begin);
    remove_edge(seg.end);
    segments_.erase(id);
  }

  // release_available_cached_blocks: only with max_split_size set, and
  // only segments of the request's stream and pool (not expandable ones,
  // which PyTorch's release_block does not take either).
  bool release_oversize(const PoolKey& pool, std::size_t size) {
    if (conf_.max_split_size_bytes == std::numeric_limits<std::size_t>::max() || conf_.expandable_segments)
      return false;
    auto p = cached_.find(pool);
    if (p == cached_.end()) return false;
    auto& blocks = p->second;
    const std::size_t want = std::max(size, conf_.max_split_size_bytes);
    if (const auto it = blocks.lower_bound({want, 0}); it != blocks.end()) {
      if (!whole_free_segment(it->second)) return false;
      release_segment(it->second);
      return true;
    }
    // No single block large enough: free the largest oversize ones until enough.
    std::size_t released = 0;
    while (released < want && !blocks.empty() && blocks.rbegin()->first >= conf_.max_split_size_bytes &&
           whole_free_segment(blocks.rbegin()->second)) {
      released += blocks.rbegin()->first;
      release_segment(blocks.rbegin()->second);
    }
    return released >= want;
  }

  // release_cached_blocks: every wholly free segment of every stream and
  // pool back to the device; expandable segments unmap the free pages at
  // their growing end.
  void release_cached() {
    std::vector<std::size_t> whole;
    for (const auto& [key, blocks] : cached_)
      for (const auto& [bytes, offset] : blocks)
        if (whole_free_segment(offset)) whole.push_back(offset);
    for (std::size_t offset : whole) release_segment(offset);
    std::vector<PoolKey> emptied;
    for (const auto& [pool, id] : expandable_)
      if (unmap_growing_end(id, page_of(pool))) emptied.push_back(pool);
    for (const PoolKey& pool : emptied) expandable_.erase(pool);
  }

  // Unmaps the wholly free pages at an expandable segment's growing end;
  // true when the segment had nothing else and is gone.
  bool unmap_growing_end(int id, std::size_t page) {
    Segment& seg = segments_.at(id);
    const std::optional<std::size_t> tail = growing_end_block(seg);
    if (!tail) return false;
    const auto t = blocks_.find(*tail);
    const std::size_t t_begin = t->first, t_end = t->first + t->second.bytes;
    // Pages count from the segment's fixed end: its begin, or its end when it grows down.
    const std::size_t keep_begin = seg.grows_down ? seg.end - whole_pages(seg.end - t_end, page) : t_begin;
    const std::size_t keep_end = seg.grows_down ? t_end : seg.begin + whole_pages(t_begin - seg.begin, page);
    const std::size_t unmap_begin = seg.grows_down ? seg.begin : keep_end;
    const std::size_t unmap_end = seg.grows_down ? keep_begin : seg.end;
    if (unmap_end <= unmap_begin) return false;
    uncache(t);
    blocks_.erase(t);
    if (seg.grows_down ? keep_begin < t_end : t_begin < keep_end) {
      const std::size_t begin = seg.grows_down ? keep_begin : t_begin;
      blocks_[begin] = {(seg.grows_down ? t_end : keep_end) - begin, id, {seg.stream, seg.small}, false, 0};
      cache(begin);
    }
    unreserved_.give_back(unmap_begin, unmap_end - unmap_begin);
    reserved_ -= unmap_end - unmap_begin;
    move_edge(seg.grows_down ? seg.begin : seg.end, seg.grows_down ? unmap_end : unmap_begin);
    if (seg.bytes() > 0) return false;
    remove_edge(seg.begin);
    remove_edge(seg.end);
    segments_.erase(id);
    return true;
  }

  std::size_t arena_;
  PytorchAllocConf conf_;
  FreeList unreserved_;                         // arena ranges no segment holds
  std::map<int, Segment> segments_;             // by id
  int next_segment_ = 0;
  std::map<std::size_t, SegmentBlock> blocks_;  // every block of every segment, by offset
  std::map<PoolKey, std::set<std::pair<std::size_t, std::size_t>>> cached_;  // free blocks: (bytes, offset)
  // For lacking_in_pool: the least room a larger arena must add for some
  // miss (a request whose segment no unreserved range held) to be served
  // at its end before releasing (or after, where the request failed), and
  // the failed request's segment.
  std::size_t miss_room_ = std::numeric_limits<std::size_t>::max();
  std::optional<std::size_t> failed_claim_;
  std::map<PoolKey, int> expandable_;           // the expandable segment of each stream and pool
  std::size_t reserved_ = 0, load_ = 0;
  std::map<std::size_t, int> edges_;            // segment begins and ends: how many segments have each
  mutable std::vector<std::size_t> boundaries_;  // edges_ inside the arena, for pool_starts()
  mutable bool boundaries_stale_ = true;
};

}  // namespace

std::unique_ptr<Allocator> make_pytorch_allocator(std::size_t pool_bytes, const PytorchAllocConf& conf) {
  return std::make_unique<PytorchAllocator>(usable_pool(pool_bytes), conf);
}

}  // namespace tidepool
