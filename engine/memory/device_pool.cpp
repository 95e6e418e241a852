#include "engine/memory/device_pool.h"

#include <stdexcept>
#include <string>

#include "engine/core/bytes_text.h"

namespace tidepool {

DevicePool::DevicePool(Device& device, std::string_view heuristic, std::size_t pool_bytes)
    : device_(device),
      pool_bytes_(pool_bytes),
      allocator_(make_allocator(heuristic, pool_bytes)),
      replay_(*allocator_, 0) {}

void DevicePool::start_iteration(int park_horizon) {
  replay_.set_park_horizon(park_horizon);
  replay_.start_iteration();
}

DevicePool::Placed DevicePool::place(std::int64_t id, const AllocRequest& request, int step, std::string_view name) {
  const auto offset = replay_.place(id, request, step);
  if (!offset) {
    const PoolStats s = replay_.stats();
    throw DeviceError("the memory pool (" + format_bytes(s.pool_bytes) + ") has no room for " + std::string(name) +
                      " (" + format_bytes(round_up(request.bytes)) + "): " + format_bytes(s.load_bytes) +
                      " in use, largest free block " + format_bytes(s.largest_free_block_bytes));
  }
  Placed placed{*offset, replay_.reclaimed()};
  // A reclaimed block is the id's own: the copy still reading it is no
  // reason to wait (its fence stays for later owners).
  if (placed.reclaimed) return placed;
  for (Placed::Copy& copy : fences_.take_overlapping({*offset, round_up(request.bytes)}))
    if (!device_.done(*copy.done)) placed.ready.push_back(std::move(copy));
  return placed;
}

void DevicePool::free(std::int64_t id, int step, bool park, std::shared_ptr<DeviceEvent> after) {
  if (after) fences_.add(replay_.block_of(id), {std::move(after), id});
  replay_.free(id, step, park);
}

void DevicePool::end_iteration() {
  fences_.clear();
  // Every offloaded tensor comes back in backward, which gives its parked
  // block back (the planner's promise; the dry run relies on it too).
  if (replay_.parked_blocks() != 0)
    throw std::logic_error(std::to_string(replay_.parked_blocks()) + " parked blocks outlived the iteration");
}

}  // namespace tidepool
