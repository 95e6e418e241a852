// One device of a PyTorch memory snapshot (engine/memory/snapshot/
// pytorch_snapshot.h) as an allocation trace (engine/memory/alloc_trace.h)
// that every heuristic can replay, with what the trace itself says about
// PyTorch's own allocator kept beside it.
//
//   SnapshotTrace t = snapshot_trace(read_pytorch_snapshot(json, "snap.pickle"), "snap.pickle");
//   replay(t.trace, *make_allocator("best-fit", total_alloc_bytes(t.trace)));
//
// How the trace is made:
//   - The device: the one asked for, else the busiest (the most trace
//     entries; the lowest index on a tie).
//   - Blocks live at the trace's start come first, as allocs: PyTorch keeps
//     the last N entries in a ring buffer, so a trace often starts
//     mid-run. A block freed with no alloc before it in the trace was live
//     then (its size is the free's, which PyTorch records as the block's
//     requested size; the snapshot's segments show the memory as it is at
//     the end, where that address may hold another block since), and a
//     block the segments show allocated at the end that the trace never
//     mentions was live all along (its size is the segment block's
//     requested size). PyTorch's viewer draws both the same way. The
//     frames of a block freed with no alloc are the free's, so its label
//     says where it was freed, not where it was made; its id is never
//     handed to a later alloc (see below), as that is matched by where it
//     was made.
//   - Each `alloc` is an alloc of its requested size. Its id: the lowest
//     id that an earlier block from the same frames and size has freed,
//     else a new one; so a training loop's iterations carry the same ids
//     and a policy that learns (smartpool) sees the repetition, as it does
//     with the tensor ids of Tidepool's own schedules. A 0-byte alloc takes
//     no memory and is left out, with its free.
//   - Frees happen at `free_completed`: that is when PyTorch's allocator
//     takes the block back and can hand it out again. A block used by
//     another stream is freed by the program (`free_requested`) and
//     reused only after that stream's work is done; between the two it
//     still holds its memory, so the replay keeps it. A block whose
//     free_completed is not in the trace yet stays live to the end. A
//     trace recorded without free_completed entries (skip_actions) is
//     freed at free_requested instead.
//   - An alloc at an address that is still live, or a second free of one,
//     is refused (std::invalid_argument naming the entry): the trace is
//     not one allocator's.
//   - segment_alloc/segment_free/segment_map/segment_unmap make the
//     trace's own reserved-bytes sequence; oom entries are kept with where
//     they happened. Other entries (snapshot) change nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/snapshot/pytorch_snapshot.h"

namespace tidepool {

// PyTorch's allocator after a segment event of the trace.
struct ReservedChange {
  std::size_t entry = 0;        // the device trace entry
  std::size_t trace_events = 0; // how many events of SnapshotTrace::trace came before it
  std::uint64_t reserved_bytes = 0;
};

struct SnapshotOom {
  std::size_t entry = 0;         // the device trace entry
  std::size_t trace_events = 0;  // how many events of the trace came before it
  std::uint64_t bytes = 0;       // what was asked for: PyTorch records the request rounded up to 512 B (round_size)
  std::uint64_t device_free = 0; // what the device had free
  std::int64_t stream = 0;       // the stream it was asked on (PyTorch's handle)
};

struct SnapshotTrace {
  int device = 0;           // the device_traces index read
  int devices = 0;          // how many the snapshot has
  std::size_t entries = 0;  // that device's trace entries
  AllocTrace trace;
  // Per event of `trace` (parallel to it), what a TraceEvent does not hold:
  std::vector<int> stream;          // index into `streams` (as each TraceEvent::stream)
  std::vector<int> stack;           // index into `stacks`; -1: no frames
  std::vector<std::int64_t> entry;  // the trace entry it comes from; -1: live at the start
  std::size_t live_at_start = 0;    // the first events of `trace`: allocs of blocks live when the trace began
  std::vector<std::int64_t> streams;      // PyTorch's stream handles, ascending (the default stream, 0, first)
  std::vector<SnapshotStack> stacks;      // the snapshot's frames lists
  std::vector<std::string> stack_labels;  // per stack: its innermost user frame (frame_label)
  // The trace's own figures: PyTorch's reserved bytes, starting from the
  // segments the snapshot ends with less what the trace's segment events
  // added (0 if that comes out negative: segments missing), and the most
  // bytes requested at once (the sizes programs asked for, live-at-start
  // blocks in). That is not PyTorch's "allocated" figure, which counts
  // each block as the allocator cut it: rounded up to 512 B, and with the
  // rest of a block too small to split; the trace does not say how each
  // was cut.
  std::uint64_t reserved_at_start = 0, peak_reserved = 0, peak_requested = 0;
  std::vector<ReservedChange> reserved;
  std::vector<SnapshotOom> ooms;
  // The label of trace event `i` ("" when it has no frames).
  const std::string& label(std::size_t i) const;
};

// `device`: a device_traces index, or nothing for the busiest. Throws
// std::invalid_argument naming `source` for a device out of range or an
// inconsistent trace (see above).
// The snapshot is taken (its stacks move into the result): pass std::move.
SnapshotTrace snapshot_trace(PyTorchSnapshot snapshot, const std::string& source,
                             std::optional<int> device = std::nullopt);

// Whether a frame is the user's code: a Python file (.py) outside PyTorch
// (no `torch` folder in its path) and outside Python's own library (a
// `pythonX.Y` folder not followed by site-packages or dist-packages).
// C++ frames (stacks="all"), PyTorch's modules and contextlib & co. are not.
// Third-party packages in site-packages (torchvision, timm, ...) count as
// the user's code: only a folder named exactly `torch` is PyTorch's. The
// `pythonX.Y` folder is matched as written, case-sensitively (a Windows
// `Python311\Lib` is not recognised; its frames count as the user's).
bool is_user_frame(const SnapshotFrame& frame);
// A block's label: "file.py:LINE:function" of the innermost user frame
// (the file without its folders, as PyTorch's viewer prints frames); else
// of the innermost frame; "" for no frames.
std::string frame_label(const SnapshotStack& stack);

}  // namespace tidepool
