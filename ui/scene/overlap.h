// The overlap scenario's link speed, chosen from what this machine does.
//
// Whether copies can hide under compute depends on how fast the machine
// computes: a link that stalls a laptop's forward pass is idle on a big
// desktop. The scenario therefore sets the cpu device's link from a
// measured iteration so that every offload of the forward pass, end to
// end, takes `fraction` of the forward pass's compute time. Below one,
// asynchronous copies fit under the compute as a whole, while a short
// layer still finishes before its own copy does, so synchronous transfers
// stall there.
#pragma once

#include <cstdint>
#include <optional>

#include "ui/scene/timeline.h"
#include "engine/run/run_settings.h"
#include "ui/session_link.h"

namespace tidepool::ui {

// What the scenario trains: vDNN++'s constructed network (Table III) at a
// batch small enough that an iteration takes well under a second on a
// laptop's cores, every layer's input offloaded, and two backward
// prefetches in flight (with one, a short layer's compute cannot hide the
// next copy back, and async stalls there too).
struct OverlapScenario {
  static constexpr const char* model = "vdnn_constructed";
  static constexpr std::int64_t batch = 32;
  static constexpr int lookahead = 2;
  static constexpr double first_link_gbps = 1.0;  // until an iteration has been measured
};

// The scenario's memory settings over `from` (which keeps its heuristic
// and conv scheme): every input offloaded, the scenario's lookahead, the
// given transfers and link, and the given budget (0: the least the
// settings need; async transfers park offloaded blocks only in a pool with
// room for that, see SessionStatus::parking_budget).
MemorySettings overlap_settings(MemorySettings from, TransferMode transfer, double link_gbps,
                                std::size_t budget_bytes = 0);

// A run of the scenario over `from` (its data, seed and the rest): the
// scenario's model and batch and overlap_settings' memory settings, with
// the given link, or first_link_gbps when that is 0. What
// --overlap-scenario and the scenario's start button train.
RunSettings overlap_run(RunSettings from, TransferMode transfer, double link_gbps);

inline constexpr double kOverlapCopyFraction = 0.6;

// GB/s (1e9 bytes per second) for the newest finished iteration of the
// scene, or nothing when it has no forward compute or no offloads.
std::optional<double> overlap_link_gbps(const TimelineScene& timeline, double fraction = kOverlapCopyFraction);

}  // namespace tidepool::ui
