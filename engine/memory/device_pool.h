// The stream-ordered device pool under the executor, after PyTorch's
// CUDACachingAllocator: blocks are placed through the one replay loop
// (engine/memory/replay.h), so a run places every tensor where the dry run
// did, and a block whose bytes a copy may still be reading is freed "after
// this event": the range goes back to the allocator (or is parked) at
// once, and whoever is placed over it next is told which events to wait
// for. The executor never tracks fences itself.
//
//   DevicePool pool(device, "best-fit", pool_bytes);
//   pool.start_iteration(schedule.park_horizon);
//   DevicePool::Placed p = pool.place(t, {bytes, t, role, will_offload}, step);
//   for (auto& c : p.ready) device.wait(Stream::compute, *c.done);  // offloads still reading the range
//   ...
//   pool.free(t, step, /*park=*/true, offload_done);          // its copy to the host may still run
//   pool.end_iteration();                                     // once the device is idle
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/device/device.h"
#include "engine/memory/allocator.h"
#include "engine/memory/copy_fences.h"
#include "engine/memory/replay.h"

namespace tidepool {

class DevicePool {
 public:
  DevicePool(Device& device, std::string_view heuristic, std::size_t pool_bytes);

  const Allocator& allocator() const { return *allocator_; }
  std::size_t pool_bytes() const { return pool_bytes_; }
  void set_observer(PoolObserver* observer) { replay_.set_observer(observer); }

  // A new iteration of a schedule that parks at most `park_horizon`
  // offloaded blocks at once (Schedule::park_horizon); the figures start again.
  void start_iteration(int park_horizon);

  struct Placed {
    std::size_t offset = 0;
    // The id's own parked block, taken back with its bytes: nothing needs
    // to be copied back, and nothing to wait for.
    bool reclaimed = false;
    // The copies still reading the range, which the block's first user
    // must wait for: each copy's event and the id of the block it copies.
    // Every one of them, not only the last freed: blocks are freed in
    // another order than their copies were issued (a tensor offloaded
    // early can have a later last reader), so the last freed can be an
    // older copy that finishes first.
    struct Copy {
      std::shared_ptr<DeviceEvent> done;
      std::int64_t id = -1;
    };
    std::vector<Copy> ready;
  };
  // Throws DeviceError naming the figures when the pool has no room for it.
  Placed place(std::int64_t id, const AllocRequest& request, int step, std::string_view name);
  // Gives `id`'s block back, or parks it (`park`: its copy to the host may
  // still run, so forward work should go elsewhere while there is room).
  // With `after`, whatever takes the range over next waits for that event.
  void free(std::int64_t id, int step, bool park, std::shared_ptr<DeviceEvent> after = nullptr);
  // The device is idle: every fence has passed. Throws std::logic_error if
  // a block is still parked (every offloaded tensor comes back in backward).
  void end_iteration();

  const PoolFigures& figures() const { return replay_.figures(); }
  PoolStats stats() const { return replay_.stats(); }

 private:
  Device& device_;
  std::size_t pool_bytes_;
  std::unique_ptr<Allocator> allocator_;
  PoolReplay replay_;
  CopyFences<Placed::Copy> fences_;
};

}  // namespace tidepool
