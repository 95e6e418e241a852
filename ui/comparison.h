// `tidepool view A B`: two runs (or snapshots) in one window, A above B,
// each with every view, so that their timelines, address maps and load
// curves sit one over the other. Their pictures share axes (the larger
// of each: bytes, steps, samples, time), so that the same address, the
// same step and the same millisecond are at the same place in both, and
// the taller map is the run that needs more memory.
#pragma once

#include "ui/dashboard.h"

namespace tidepool::ui {

// Draws one frame of the two into the current ImGui frame.
void draw_comparison(Dashboard& a, Dashboard& b, float width, float height);

}  // namespace tidepool::ui
