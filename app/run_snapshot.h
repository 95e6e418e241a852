// A finished --batch run's traced iterations as a PyTorch memory snapshot
// (engine/memory/snapshot/pytorch_snapshot.h): what `tidepool export
// --pytorch-snapshot` writes, so that PyTorch's memory viewer opens a
// Tidepool run, and what `tidepool replay RUN_DIR` replays, through the
// same snapshot_trace as any PyTorch snapshot. A run and its export are one
// trace because both are read from this one structure.
//
//   PyTorchSnapshot s = run_snapshot("runs/r20");
//   SnapshotTrace t = snapshot_trace(std::move(s), "runs/r20");
//
// How the run's pool events (engine/observe/events.h: AllocEvent, from its
// events.bin; engine/memory/pool_event.h for the actions) become PyTorch's
// trace entries, one device per rank (events.bin is device 0, a rank's
// events.rankN.bin where the folder has it, device N):
//   place      `alloc` at the block's offset, of its bytes as placed
//   free       `free_requested` then `free_completed`: the pool takes the
//              block back at once, as PyTorch's allocator does a block no
//              other stream used
//   park       `free_requested`: the tensor is dead but its copy to the
//              host may still read the block, which stays taken, as a
//              PyTorch block freed while another stream uses it
//   give_back  `free_completed`: the parked block is free at last; a
//              parked block that its tensor is placed in again (a reclaim)
//              completes its free just before that `alloc`
// Each block's frames are one frame naming its tensor: the filename is its
// role (activation, weight, workspace, ...), the line its tensor id and
// the function its name ("activation:239:conv1" in either viewer); the
// same tensor in every iteration has the same frames, so snapshot_trace
// gives it the same id in each and smartpool sees the repetition. Addresses
// are offsets into Tidepool's arena; time_us the run's device clock, in
// whole microseconds; every entry is on stream 0 (the pool is one for all
// of the run's streams). A set-up placement that comes after an iteration
// (a re-plan, in a window session saved with --out) first frees every block
// still taken: the pool was laid out again.
//
// The pool is one segment per device at address 0: the run's pool
// (summary.json's pool_bytes, or the highest block end where that is
// smaller), reserved before the trace began, and its blocks at the end:
// the ones still taken (active_allocated; a parked one
// active_pending_free), with the free ranges between them as inactive
// blocks, so the blocks tile the segment as PyTorch's do.
//
// What the trace cannot carry: which blocks the run would offload (a
// high-end row places by that) and which frees could have been parked
// longer; a replay sees the frees when the recorded pool completed them.
#pragma once

#include <filesystem>

#include "engine/memory/snapshot/pytorch_snapshot.h"

namespace tidepool::app {

// Throws std::runtime_error naming the folder when it is not a finished run
// (app/recorded_run.h: read_run_status, traced_events).
PyTorchSnapshot run_snapshot(const std::filesystem::path& folder);

}  // namespace tidepool::app
