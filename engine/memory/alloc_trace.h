// An allocation trace: a sequence of allocate and free requests, the input
// of the pool-size search and of `tidepool replay`. It is what a memory
// policy sees of a training run with the tensors, kernels and timing
// stripped away, so a policy can be compared on a sequence from a paper, a
// sequence written by hand, or one exported from a schedule.
//
// CSV format (one request per line):
//
//   event,id,bytes,offload
//   alloc,0,1048576,0
//   alloc,1,524288,1
//   free,1,,
//   free,0,,
//
//   - The first line that is not blank and not a comment is the header:
//     `event,id,bytes,offload`, or `event,id,bytes` (no offload column).
//   - event: `alloc` or `free`.
//   - id: an integer naming the block; a free names the block by the id it
//     was allocated with. An id may be allocated again once freed, and
//     policies that learn (smartpool) read it as the tensor id, so a trace
//     that gives each iteration's blocks the same ids lets them learn.
//   - bytes: for alloc, the size in bytes (1 to 2^48; policies round it up
//     to 256 B); for free, empty (a number there is ignored).
//   - offload: on an alloc, 1 if the block will be offloaded to the host
//     (vDNN++'s high-end policy places such blocks at the top of the pool);
//     on a free, 1 if the block's copy to the host may still be running
//     (async transfers): it is parked, still taken, until an allocation
//     needs the room, or taken back as it is when the id is allocated again
//     with the same size (engine/memory/parking.h).
//     0 or empty otherwise; the whole column, or a row's trailing empty
//     field, may be left out.
//   - Blank lines and lines starting with `#` are ignored; fields may be
//     padded with spaces; CRLF line ends are accepted.
//   - A free of an id that is not live, or an alloc of an id that is still
//     live, is an error. Blocks still live at the end are allowed.
//
// Errors are std::invalid_argument naming the file and line. A trace goes
// through the pool by engine/memory/replay.h's replay().
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

struct Schedule;

// TraceEvent::step of an event that comes from no schedule step.
inline constexpr int kNoStep = std::numeric_limits<int>::min();

struct TraceEvent {
  enum class Kind : std::uint8_t { alloc, free };
  Kind kind = Kind::alloc;
  std::int64_t id = 0;
  std::size_t bytes = 0;  // alloc only
  bool will_offload = false;  // alloc: see the offload column
  bool after_copy = false;    // free: see the offload column
  // The schedule step it comes from (trace_of: -1 for the persistent
  // tensors, placed before the first step), so a replay reports steps;
  // kNoStep in a trace read from CSV. Not part of the format, nor of equality.
  int step = kNoStep;
  // The stream it runs on (a PyTorch snapshot's), for a policy that keeps
  // blocks per stream (pytorch); 0 for a schedule's and a CSV's. Not part
  // of the format, nor of equality (as `step`).
  int stream = 0;
  // alloc: what the block holds, for the breakdown of the peak load by
  // role (trace_of: the schedule's tensor's); a CSV or snapshot trace
  // knows no roles and counts every block as an activation. Not part of
  // the format, nor of equality (as `step`).
  Role role = Role::activation;
  bool operator==(const TraceEvent& o) const {
    return kind == o.kind && id == o.id && bytes == o.bytes && will_offload == o.will_offload &&
           after_copy == o.after_copy;
  }
};
using AllocTrace = std::vector<TraceEvent>;

inline constexpr std::size_t kMaxTraceBlockBytes = std::size_t{1} << 48;

// Parses the CSV format above; `source` names the input in error messages.
AllocTrace read_trace(std::istream& in, const std::string& source);
// Reads a trace file (std::invalid_argument when it cannot be opened).
AllocTrace read_trace_file(const std::string& path);
// Writes the CSV format, with the offload column; read_trace reads it back
// to an equal trace.
void write_trace(std::ostream& out, const AllocTrace& trace);
void write_trace_file(const std::string& path, const AllocTrace& trace);

// Throws std::invalid_argument naming the event (0-based) for a free of an
// id that is not live, an alloc of a live id, or a size out of range: the
// checks read_trace makes, for traces built in code.
void validate(const AllocTrace& trace);

// The memory load of a trace: the bytes of its live blocks, every size
// rounded up to kAllocGranularity. Its peak is the least pool any placement
// could work in; the replay loop (engine/memory/replay.h) counts the same
// load as it places, and a planned schedule's peak load is this one.
std::size_t peak_load_bytes(const AllocTrace& trace);
// Every allocation's most claimed bytes (allocator.h: most_claimed_bytes,
// its rounded size for most policies, a whole segment for pytorch) summed
// (saturating): a pool big enough to stand for "unbounded". The online
// policies never place a block above the sum of the claims before it
// (pytorch places each new segment in the lowest range that holds it, and
// gives none back while it has room), and high-end, which fills from both
// ends, always finds the middle gap big enough, so every registered policy
// serves the trace in a pool this size (smartpool keeps a learned layout
// only if it fits).
std::size_t total_alloc_bytes(const AllocTrace& trace);

// The requests of a planned schedule: the persistent tensors first (never
// freed; left out with `with_persistent` false, for an allocator that holds
// them already), then `iterations` copies of the steps' allocs and frees,
// each with its step. Ids are the schedule's tensor ids, so smartpool can
// learn from it; a free whose block an offload may still read
// (Step::after_copy) is marked after_copy, and the replay's park horizon
// decides whether it is parked (replay it with the schedule's
// park_horizon: a plain trace's default parks every one).
AllocTrace trace_of(const Schedule& schedule, int iterations = 1, bool with_persistent = true);

}  // namespace tidepool
