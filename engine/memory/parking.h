// vDNN++'s asynchronous release (Shriram et al., §IV-A), kept independent of
// timing.
//
// In vDNN++ an offloaded tensor's device block goes back to the pool when
// its copy to the host completes, and an allocation stalls only while the
// pool has no room. Releasing on completion would make placement (and so
// fragmentation and the pool a run needs) depend on how fast the link is.
// Tidepool instead *parks* such a block when the plan frees it: the tensor
// is dead (it no longer counts in the memory load), but its bytes stay
// taken in the pool, so the next allocations go elsewhere while there is
// room and never wait for the copy. A parked block is given back, the
// first parked first (mostly the oldest copy, the first to finish; a
// tensor offloaded early but read late parks after later copies, and the
// fences keep any order safe),
//
//   - when an allocation cannot be placed without it;
//   - when more than `horizon` blocks would be parked at once: parked
//     blocks cost memory at the peak, and a tight pool can afford only a
//     few; by the time `horizon` later layers have parked theirs, the
//     oldest copy has had those layers' compute time to finish.
//
// The work that then reuses the range waits for that copy on the device
// (the executor's fences), and only if it is still running.
//
// When the tensor is allocated again (prefetched for backward) while its
// block is still parked, it takes that block back as it is: nobody has
// written there since, so its bytes are still the tensor's and the executor
// skips the copy back (reclaimed()).
//
// It is one layer of the replay loop (engine/memory/replay.h), through
// which the executor, the dry run and the trace replay all place their
// blocks, so they place every block at the same offset in every run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

#include "engine/memory/allocator.h"

namespace tidepool {

// A park horizon for "every parked block stays until the pool needs the
// room" (Schedule::park_horizon).
inline constexpr int kParkUntilNeeded = std::numeric_limits<int>::max();

class Parking {
 public:
  // `horizon`: the most blocks parked at once (kParkUntilNeeded: no limit).
  explicit Parking(Allocator& pool, int horizon = kParkUntilNeeded)
      : pool_(pool), horizon_(horizon) {}

  // Places a block for `id` (the tensor, or a trace's block id): the block
  // `id` has parked, if it is still parked and of the requested size
  // (reclaimed); otherwise asks the pool, giving back parked blocks oldest
  // first while it has no room. Nothing when the pool cannot place it even
  // with every parked block given back.
  std::optional<std::size_t> allocate(std::int64_t id, const AllocRequest& request);
  // A new horizon, between iterations (with nothing parked).
  void set_horizon(int horizon) { horizon_ = horizon; }
  int horizon() const { return horizon_; }
  // Whether the last allocate() took back the caller's own parked block,
  // contents and all.
  bool reclaimed() const { return reclaimed_; }
  // Frees at once (nothing is reading the block).
  void free(std::size_t offset) { pool_.free(offset); }
  // Parks the block `id` holds at `offset` (`bytes` as allocated): its copy
  // to the host may still be reading it. Gives back the oldest parked
  // blocks beyond the horizon (see released()).
  void free_after_copy(std::int64_t id, std::size_t offset, std::size_t bytes);

  // The pool's figures with parked blocks out of the load (the tensors are
  // dead) and in the extent (their bytes are taken). peak_load_bytes is
  // the pool's own record, parked blocks included.
  PoolStats stats() const;
  std::size_t parked_bytes() const { return parked_bytes_; }
  std::size_t parked_blocks() const { return parked_.size(); }
  struct Parked {
    std::int64_t id;  // as given to free_after_copy
    std::size_t offset, bytes;
  };
  // The parked blocks the last allocate() or free_after_copy() gave back,
  // oldest first (for callers that track occupancy, like the trace
  // replay's overlap check, or report it, like the executor).
  const std::vector<Parked>& released() const { return released_; }

 private:
  void give_back(std::deque<Parked>::iterator it);

  Allocator& pool_;
  int horizon_;
  std::deque<Parked> parked_;  // oldest first
  std::size_t parked_bytes_ = 0;
  std::vector<Parked> released_;
  bool reclaimed_ = false;
};

}  // namespace tidepool
