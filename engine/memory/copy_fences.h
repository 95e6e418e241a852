// The ranges of the pool that a copy to the host may still be reading
// (an offloaded tensor's block, freed or parked once its copy was issued),
// each with what identifies the copy. The first block placed over any of
// their bytes must wait for every such copy (engine/memory/device_pool.h);
// after that the range is an ordinary one, so the fence is taken away.
// The executor's pool keeps its copies' events here, and the performance
// model's pool (engine/memory/copy_waits.h) the tensors, so the two agree on
// which placement waits for which copy.
#pragma once

#include <utility>
#include <vector>

#include "engine/memory/pool_event.h"

namespace tidepool {

template <class Copy>
class CopyFences {
 public:
  void add(Range range, Copy copy) { fences_.push_back({range, std::move(copy)}); }

  // The copies still reading any byte of `range`, oldest first, each
  // given once: their fences are gone afterwards. Blocks are freed in
  // another order than their copies were issued (a tensor offloaded early
  // can have a later last reader), so every overlapping one counts, not
  // only the last freed.
  std::vector<Copy> take_overlapping(Range range) {
    std::vector<Copy> out;
    for (auto it = fences_.begin(); it != fences_.end();) {
      if (it->range.offset >= range.end() || range.offset >= it->range.end()) {
        ++it;
        continue;
      }
      out.push_back(std::move(it->copy));
      it = fences_.erase(it);
    }
    return out;
  }

  void clear() { fences_.clear(); }

 private:
  struct Fence {
    Range range;
    Copy copy;
  };
  std::vector<Fence> fences_;  // oldest first
};

}  // namespace tidepool
