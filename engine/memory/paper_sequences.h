// The allocation sequences the papers argue with, as traces: the
// examples vDNN++ (Shriram et al.) uses to show that fragmentation is
// unavoidable, that a pool search cannot be monotone, and that CNMeM's
// unmerged pools waste memory. The tests check the papers' claims on them,
// `tidepool replay` can read them once written out, and the UI's teaching
// scenario plays them step by step through every heuristic side by side.
//
// Sizes are in the papers' abstract "units"; a unit here is a small
// multiple of kAllocGranularity so every policy places the blocks exactly
// where the paper's arithmetic says (no rounding in between).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/memory/alloc_trace.h"

namespace tidepool {

struct PaperSequence {
  std::string name;         // a stable key: "nine-versus-eleven", ...
  std::string title;        // one line: the paper, the section and the claim
  std::string explanation;  // one paragraph for students: what happens and what to look for
  std::size_t unit_bytes = kAllocGranularity;  // one of the paper's units
  AllocTrace trace;
  // The paper's name for each event of `trace` ("A1(5)", "d1: free a11",
  // ...), one per event, for captions and step labels.
  std::vector<std::string> event_labels;
  // The pool to replay it in: the size the paper's point is made at, with
  // room for each policy to show what it does with the space.
  std::size_t pool_bytes = 0;
  // cnmem's first pool, claimed up front, as vDNN++ configures CNMeM (its
  // initial pool); 0 leaves the registry's default, which starts with no
  // pool and grows by one pool per request that does not fit.
  std::size_t cnmem_initial_pool_bytes = 0;
};

// vDNN++ §IV-B: A1(5), A2(2), A3(1), D2, A4(1), D1, D3, A5(8). Best fit
// serves it in a 9-unit pool but not in an 11-unit one, so the pool-size
// search, which only grows, can miss the smallest pool. Replayed at 11 units.
PaperSequence nine_versus_eleven();

// vDNN++ §III-B: a11 a12 a13 a14 d1 a22 a23 a24 d2 a33 a34 d3 a44 d4. The
// load is 4 units just before every d_j, yet no placement that never moves
// a block serves it in 4 units. A unit is three granules (a2j is 1/3 unit).
PaperSequence unavoidable_fragmentation();

// vDNN++ Fig. 7 in miniature (1 unit stands for the figure's 100 MB): a
// 6-unit initial CNMeM pool, allocations of 1, 2 and 3 units, the 1 and the
// 3 freed, then 4 units asked for: 4 units are free but not contiguous, so
// CNMeM claims a new 4-unit pool where merging would have needed one unit.
PaperSequence cnmem_figure7();

// Every sequence above, in the order listed.
std::vector<PaperSequence> paper_sequences();

}  // namespace tidepool
