// A PyTorch memory snapshot, as `torch.cuda.memory._snapshot()` returns it
// and `_dump_snapshot` pickles it (or `json.dump` writes it): the state of
// the CUDA caching allocator when it was taken, and, when
// `_record_memory_history` was on, the allocator's recent events per device.
//
//   {"segments": [ {"device": 0, "address": 140..., "total_size": 20971520,
//                   "stream": 0, "segment_type": "large", ...,
//                   "blocks": [ {"address": ..., "size": 2097152,
//                                "requested_size": 2000000,
//                                "state": "active_allocated",
//                                "frames": [...]}, ... ]}, ... ],
//    "device_traces": [ [ {"action": "alloc", "addr": ..., "size": 2000000,
//                          "stream": 0, "time_us": ..., "frames": [
//                            {"filename": "train.py", "line": 42,
//                             "name": "forward"}, ...]}, ... ],   # device 0
//                       [ ... ] ] }                                # device 1
//
// The field and action names are PyTorch's (the docstring of
// torch/cuda/memory.py's _snapshot, and torch/cuda/_memory_viz.py, which
// reads the same structure). Actions: alloc, free_requested,
// free_completed, segment_alloc, segment_free, segment_map, segment_unmap,
// oom, snapshot; older snapshots write `free` for a completed free. An
// `oom` entry has no addr; its `device_free` is what the device had free
// and its `size` what was asked for. Frames list the innermost call first.
//
// This reads that structure from the value graph (engine/memory/snapshot/
// plain_data.h) that the pickle reader or the JSON reader gives, checking
// every field it uses:
// a missing or mistyped one is std::invalid_argument naming the source and
// the field's path ("snap.pickle: device_traces[0][17].size: expected a
// non-negative integer, got string"). Fields it does not use are ignored,
// and so are trace entries with an action it does not know (counted), so a
// newer PyTorch's additions do not stop it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory/snapshot/plain_data.h"

namespace tidepool {

struct SnapshotFrame {
  std::string filename;
  std::int64_t line = 0;
  std::string name;
  bool operator==(const SnapshotFrame&) const = default;
};
// A call stack, innermost frame first (PyTorch's order).
using SnapshotStack = std::vector<SnapshotFrame>;

enum class SnapshotAction : std::uint8_t {
  alloc,
  free_requested,
  free_completed,  // also the older `free`
  segment_alloc,
  segment_free,
  segment_map,
  segment_unmap,
  oom,
  snapshot,
};
const char* action_name(SnapshotAction action);

struct SnapshotEvent {
  SnapshotAction action = SnapshotAction::alloc;
  std::uint64_t addr = 0;  // 0 for oom, which has none
  std::uint64_t size = 0;  // alloc and frees: the bytes requested; segments: the segment's bytes; oom: the bytes asked; snapshot: the bytes active
  std::int64_t stream = 0;  // PyTorch's stream handle (0: the default stream)
  std::optional<std::int64_t> time_us;
  std::uint64_t device_free = 0;  // oom only
  int stack = -1;  // index into PyTorchSnapshot::stacks; -1: no frames recorded
};

struct SnapshotBlock {
  std::uint64_t address = 0, size = 0, requested_size = 0;
  std::string state;  // active_allocated, active_pending_free (or active_awaiting_free), inactive
  int stack = -1;
};

struct SnapshotSegment {
  int device = 0;
  std::uint64_t address = 0, total_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // small or large
  std::vector<SnapshotBlock> blocks;
};

struct PyTorchSnapshot {
  std::vector<std::vector<SnapshotEvent>> device_traces;  // per device, oldest first
  std::vector<SnapshotSegment> segments;                  // every device's
  std::vector<SnapshotStack> stacks;                      // each distinct frames list once
  std::size_t unknown_actions = 0;                        // entries skipped
  // How many devices it describes: its device_traces, or more where a
  // segment names a higher device.
  int devices() const;
};

// Reads the structure above; `source` names it in error messages.
PyTorchSnapshot read_pytorch_snapshot(const PlainData& snapshot, const std::string& source);

// The structure above as PyTorch writes it, for a writer (engine/memory/
// snapshot/pickle_writer.h, or plain_data_json for JSON): read_pytorch_snapshot
// reads it back to the same snapshot (stacks numbered in the order the
// trace, then the segments, first use them). Each stack is one frames list
// that every entry from it shares, as PyTorch's are; an entry or block
// without one (-1) has no `frames` (a block: an empty list). A segment's
// allocated_size, active_size and requested_size are summed from its
// blocks, and it is a block-by-block segment of the default pool
// (segment_pool_id (0, 0), is_expandable False), as PyTorch describes one.
PlainData snapshot_data(const PyTorchSnapshot& snapshot);

}  // namespace tidepool
