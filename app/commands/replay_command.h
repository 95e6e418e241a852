// `tidepool replay FILE`: runs an allocation trace through every memory-pool
// heuristic and prints, per heuristic, how much memory it needs.
//
// FILE may be a --batch run folder: its traced iterations (events.bin) are
// read as the snapshot `tidepool export --pytorch-snapshot` writes of it
// (app/run_snapshot.h), through the same snapshot_trace, so a run and its
// export replay to the same figures; `--device-index` picks a rank.
// The run's own pool comes first.
//
// A file is told by its content: a PyTorch memory snapshot as
// torch.cuda.memory._dump_snapshot pickles it (first byte 0x80), the JSON
// of one (`{` first), or else Tidepool's CSV. A snapshot is read without
// running anything (engine/memory/snapshot/pickle_reader.h) and one of its
// devices becomes the trace (engine/memory/snapshot/snapshot_trace.h:
// `--device-index N`, by default the busiest); its own figures come first:
// PyTorch's peak reserved bytes from its segment events, its peak
// allocated bytes and any out-of-memory with where it happened.
//
// CSV trace format (one request per line; the full description is in
// engine/memory/alloc_trace.h):
//
//   event,id,bytes,offload
//   alloc,0,1048576,0
//   alloc,1,524288,1
//   free,1,,
//   free,0,,
//
//   event    `alloc` or `free`
//   id       an integer naming the block; a free names the block it frees;
//            an id may be reused once freed (smartpool reads it as the
//            tensor id and learns a sequence that repeats with the same ids)
//   bytes    alloc: the size in bytes (1 to 2^48, rounded up to 256 B);
//            free: empty
//   offload  1 if the block will be offloaded to the host (high-end puts it
//            at the top of the pool), 0 or empty otherwise; optional column
//
// The header line is required; blank lines and `#` comments are ignored.
// A free of an id that is not live and an alloc of an id that is still live
// are errors, reported with the file and line.
//
// Columns printed, one row per heuristic (allocator_names() order):
//   peak load       the most bytes live at once (the trace's own figure)
//   footprint       the pool extent the heuristic used with an unbounded
//                   pool (every block of the trace end to end); for a
//                   heuristic that places blocks at the top of the pool
//                   (high-end) the extent is the pool itself, so the row
//                   shows the searched pool instead, marked `*`
//   ratio           footprint / peak load (SmartPool's competitive ratio)
//   free at peak    the largest free range below the footprint when the load
//                   peaked: memory fragmentation left unusable
//   pool search     vDNN++'s search: a sufficient pool, with its restarts
//   overlap         `ok` when no two live blocks ever overlapped and all lay
//                   inside the pool (a violation prints `VIOLATED` and the
//                   command returns 1)
//
// `--budget SIZE` replays the trace in a pool of SIZE with every heuristic
// and says which fit it, and at which event each other one fails first.
//
// `--pytorch-alloc-conf` sets the pytorch row's options in PyTorch's own
// syntax (PYTORCH_CUDA_ALLOC_CONF: max_split_size_mb, expandable_segments,
// ...; engine/memory/allocators/pytorch.h); a key it cannot honour is refused.
//
// `--json` prints one JSON object instead: file, format (csv, pickle, json
// or run), events, allocs, frees, peak_load_bytes, for a snapshot or a run
// `snapshot` (device, devices,
// entries, live_at_start, streams, reserved_at_start_bytes,
// peak_reserved_bytes, peak_requested_bytes, segment_events, ooms: entry,
// trace_event, bytes, stream, device_free_bytes), and `heuristics`, one object per
// row: heuristic, peak_load_bytes, footprint_bytes,
// footprint_is_searched_pool (the `*`), competitive_ratio,
// largest_free_at_peak_bytes, pool_search_bytes, pool_search_restarts,
// under --budget fits_budget (and budget_failed_event where it does not),
// overlap ("ok", or "violated" with the violation and no figures).
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <string>

#include "app/commands/command.h"

namespace tidepool::app {

struct ReplayRequest {
  std::string file;
  std::optional<int> device_index;  // a snapshot's device; nothing: the busiest
  bool json = false;
  std::size_t budget_bytes = 0;  // --budget: whether each heuristic fits this pool (0: not asked)
  std::string pytorch_alloc_conf;  // the pytorch row's, in PYTORCH_CUDA_ALLOC_CONF's syntax ("": PyTorch's defaults)
};

// Returns 0, or 1 if a heuristic broke the overlap check. Throws
// std::invalid_argument with a message naming the file (and line, or
// byte, or field) for a file that cannot be read or is malformed, and
// std::runtime_error for a folder that is not a finished run with traced
// iterations (app/recorded_run.h).
int replay_command(const ReplayRequest& request, std::ostream& out);

// `tidepool replay FILE`.
Command add_replay_command(CLI::App& cli);

// --device-index N: a snapshot's device, declared once for replay and view.
void add_device_index_option(CLI::App& cmd, std::optional<int>& device_index);

}  // namespace tidepool::app
