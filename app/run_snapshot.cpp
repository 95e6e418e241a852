#include "app/run_snapshot.h"

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "app/recorded_run.h"
#include "app/run_folder.h"
#include "engine/observe/event_file.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

// The pool events of one events file, in the order they were written.
struct AllocEvents final : EventSink {
  std::vector<AllocEvent> events;
  void on_alloc(const AllocEvent& e) override { events.push_back(e); }
};

// A block the pool holds, by offset.
struct Taken {
  std::size_t bytes = 0;
  int stack = -1;
  bool parked = false;  // freed by its tensor, still taken (free_requested, no free_completed yet)
};

// One device's trace and its segment, from one rank's events.
class DeviceTrace {
 public:
  DeviceTrace(int device, PyTorchSnapshot& out) : device_(device), out_(out), events_(out.device_traces.emplace_back()) {}

  void add(const AllocEvent& e) {
    if (e.iteration >= 0) {
      iterated_ = true;
    } else if (iterated_) {
      // A placement after an iteration: the pool was laid out again.
      while (!taken_.empty()) free(taken_.begin()->first, e);
      iterated_ = false;
    }
    switch (e.action) {
      case PoolAction::place: {
        if (const auto it = taken_.find(e.offset); it != taken_.end() && it->second.parked)
          complete(e.offset, e);  // a reclaim: the parked block's free completes as its tensor takes it again
        const int stack = stack_of(e);
        entry(SnapshotAction::alloc, e.offset, e.bytes, stack, e);
        taken_[e.offset] = {e.bytes, stack, false};
        extent_ = std::max(extent_, e.offset + e.bytes);
        return;
      }
      case PoolAction::free: free(e.offset, e); return;
      case PoolAction::park: {
        const auto it = taken_.find(e.offset);
        entry(SnapshotAction::free_requested, e.offset, e.bytes, stack_of(e), e);
        if (it != taken_.end()) it->second.parked = true;
        return;
      }
      case PoolAction::give_back: complete(e.offset, e); return;
    }
  }

  // The pool as the trace ends: one segment of `pool_bytes` at address 0.
  void end(std::size_t pool_bytes) {
    SnapshotSegment seg;
    seg.device = device_;
    seg.total_size = std::max(pool_bytes, extent_);
    seg.segment_type = "large";
    std::size_t at = 0;
    for (const auto& [offset, block] : taken_) {
      if (offset > at) seg.blocks.push_back({at, offset - at, 0, "inactive", -1});
      seg.blocks.push_back({offset, block.bytes, block.bytes, block.parked ? "active_pending_free" : "active_allocated",
                            block.stack});
      at = offset + block.bytes;
    }
    if (seg.total_size > at) seg.blocks.push_back({at, seg.total_size - at, 0, "inactive", -1});
    out_.segments.push_back(std::move(seg));
  }

 private:
  // The stack of a tensor: one frame, its role, id and name (see the header).
  int stack_of(const AllocEvent& e) {
    const auto key = std::make_tuple(e.role, e.tensor, e.name);
    const auto [it, added] = stacks_.try_emplace(key, static_cast<int>(out_.stacks.size()));
    if (added) out_.stacks.push_back({SnapshotFrame{std::string(to_string(e.role)), e.tensor, e.name}});
    return it->second;
  }
  void entry(SnapshotAction action, std::size_t offset, std::size_t bytes, int stack, const AllocEvent& at) {
    SnapshotEvent s;
    s.action = action;
    s.addr = offset;
    s.size = bytes;
    s.time_us = std::llround(at.time_us);
    s.stack = stack;
    events_.push_back(s);
  }
  // The free of a parked block completes (give_back, or a reclaim).
  void complete(std::size_t offset, const AllocEvent& at) {
    const auto it = taken_.find(offset);
    const Taken block = it != taken_.end() ? it->second : Taken{at.bytes, stack_of(at), true};
    entry(SnapshotAction::free_completed, offset, block.bytes, block.stack, at);
    if (it != taken_.end()) taken_.erase(it);
  }
  // A plain free: requested and completed at once.
  void free(std::size_t offset, const AllocEvent& at) {
    const auto it = taken_.find(offset);
    const Taken block = it != taken_.end() ? it->second : Taken{at.bytes, stack_of(at), false};
    if (!block.parked) entry(SnapshotAction::free_requested, offset, block.bytes, block.stack, at);
    entry(SnapshotAction::free_completed, offset, block.bytes, block.stack, at);
    if (it != taken_.end()) taken_.erase(it);
  }

  int device_;
  PyTorchSnapshot& out_;
  std::vector<SnapshotEvent>& events_;
  std::map<std::size_t, Taken> taken_;
  std::map<std::tuple<Role, int, std::string>, int> stacks_;
  std::size_t extent_ = 0;
  bool iterated_ = false;
};

}  // namespace

PyTorchSnapshot run_snapshot(const fs::path& folder) {
  const ui::SessionStatus status = read_run_status(folder);
  PyTorchSnapshot out;
  const int ranks = std::max(status.settings.memory.ranks, 1);
  out.device_traces.reserve(static_cast<std::size_t>(ranks));  // DeviceTrace holds a reference into it
  for (int rank = 0; rank < ranks; ++rank) {
    const fs::path file = folder / (rank == 0 ? std::string("events.bin") : ranked_file("events", ".bin", rank));
    std::error_code ec;
    if (rank > 0 && !fs::exists(file, ec)) {
      out.device_traces.emplace_back();  // that rank ran on another machine: its device stays empty
      continue;
    }
    AllocEvents events;
    traced_events(file).replay(events);
    DeviceTrace device(rank, out);
    for (const AllocEvent& e : events.events) device.add(e);
    device.end(status.memory.pool_bytes);
  }
  return out;
}

}  // namespace tidepool::app
