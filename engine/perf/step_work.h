// Static information (AccUDNN §3.2): the work of each compute step of a
// schedule, found by calling its layer with a WorkCounter exactly as the
// executor calls it with a device's kernels.
#pragma once

#include "engine/core/network.h"
#include "engine/perf/work.h"
#include "engine/schedule/schedule.h"

namespace tidepool {

// The work of step `step` (forward, backward, accumulate, update, and a
// data-parallel bucket's pack at its all_reduce step and unpack at its
// wait_all_reduce step); a step that computes nothing (alloc, free,
// transfers, waits for copies) does none.
Work step_work(const Network& network, const Schedule& s, int step, WorkCounter& counter);

}  // namespace tidepool
