// A paper's allocation sequence played step by step through several
// heuristics, as data for the teaching-scenario view: for every event, each
// heuristic's live blocks, extent, load and largest hole, so the view can
// draw the pools side by side and a student can step through the moment a
// heuristic's choice splits the free space.
//
// It drives the one replay loop (engine/memory/replay.h) event by event, so
// every figure on a frame is the loop's. Unlike tidepool::replay, which
// stops at the first request a pool cannot place, it keeps going: a failed
// request is recorded on its frame and the sequence goes on without it (a
// later free of that block is skipped), so the rest of the story stays
// visible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/memory/paper_sequences.h"

namespace tidepool::ui {

struct ReplayBlock {
  std::int64_t id = 0;  // the trace's id
  std::size_t offset = 0, bytes = 0;  // bytes as placed (rounded up)
  bool will_offload = false;
  std::size_t end() const { return offset + bytes; }
};

// The state of one heuristic's pool right after one event.
struct ReplayFrame {
  int event = -1;  // index into the sequence's trace (-1: before the first)
  std::vector<ReplayBlock> live;  // sorted by offset
  std::size_t load_bytes = 0;     // bytes of the live blocks
  // The extent as the heuristic reports it (PoolStats::extent_bytes): one
  // past the highest live byte for the single-pool policies, the end of the
  // last claimed pool for cnmem, and the load itself for exact, which
  // stands for the ideal of one allocation per tensor and so reports no
  // holes, though its blocks sit at best fit's offsets.
  std::size_t extent_bytes = 0;
  // The largest free range below the extent, never more than extent − load
  // (0 for exact): what fragmentation has left unusable inside the used
  // part of the pool. cnmem's free ranges end at its pool boundaries. (The
  // replay loop's figure: PoolReplay::largest_free_below_extent.)
  std::size_t largest_free_below_extent_bytes = 0;
  // The largest request the heuristic could still serve (PoolStats::
  // largest_free_block_bytes: free space above the extent and, for cnmem,
  // the arena it has not claimed yet included).
  std::size_t largest_free_block_bytes = 0;
  // cnmem only: where one of its pools ends and the next begins (pools never
  // merge, so no free range crosses one). Empty for the other heuristics.
  std::vector<std::size_t> pool_boundaries;
  // An alloc event: where its block went, or nothing when the heuristic
  // could not place it (`failed`).
  std::optional<std::size_t> placed_offset;
  bool failed = false;
  std::size_t failed_request_bytes = 0;  // rounded up
  // A free event of a block that never got placed (its alloc failed).
  bool skipped = false;
};

struct HeuristicReplay {
  std::string heuristic;
  std::size_t pool_bytes = 0;
  ReplayFrame start;                // the pool before the first event (cnmem's initial pool)
  std::vector<ReplayFrame> frames;  // one per event of the sequence
  int failures = 0;                 // alloc events that could not be placed
  int first_failed_event = -1;      // -1: none
  // At the end: the peak load and the footprint over the sequence (the
  // replay loop's figures), and their ratio, the competitive ratio. After
  // a failure these are of the blocks that were placed.
  std::size_t peak_load_bytes = 0;
  std::size_t footprint_bytes = 0;
  double competitive_ratio = 1.0;
  bool served() const { return failures == 0; }
};

struct FragmentationReplay {
  std::string sequence;  // PaperSequence::name
  std::size_t unit_bytes = 0;
  std::size_t pool_bytes = 0;
  std::vector<std::string> event_labels;  // the sequence's, one per frame
  std::vector<HeuristicReplay> heuristics;  // in the order asked for
};

// Plays `sequence` through a fresh allocator per heuristic in a pool of
// sequence.pool_bytes; cnmem starts from sequence.cnmem_initial_pool_bytes
// when that is set. Throws std::invalid_argument for an unknown heuristic
// or a malformed trace (engine/memory/alloc_trace.h's validate), and
// std::logic_error if a heuristic ever places a block over a live one or
// outside the pool.
FragmentationReplay replay_fragmentation(const PaperSequence& sequence, const std::vector<std::string>& heuristics);

}  // namespace tidepool::ui
