#include "engine/schedule/schedule.h"

#include "engine/schedule/alloc_granularity.h"

namespace tidepool {

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::alloc: return "alloc";
    case StepKind::free: return "free";
    case StepKind::forward: return "forward";
    case StepKind::backward: return "backward";
    case StepKind::accumulate: return "accumulate";
    case StepKind::update: return "update";
    case StepKind::all_reduce: return "all_reduce";
    case StepKind::wait_all_reduce: return "wait_all_reduce";
    case StepKind::recompute: return "recompute";
    case StepKind::offload: return "offload";
    case StepKind::prefetch: return "prefetch";
    case StepKind::wait_offload: return "wait_offload";
    case StepKind::wait_prefetch: return "wait_prefetch";
  }
  return "?";
}

std::size_t Schedule::offloaded_bytes() const {
  std::size_t bytes = 0;
  for (const PlannedTensor& t : tensors)
    if (t.offloaded) bytes += t.info.bytes();
  return bytes;
}

int Schedule::recompute_steps() const {
  return static_cast<int>(std::count_if(steps.begin(), steps.end(), [](const Step& st) { return st.kind == StepKind::recompute; }));
}

std::vector<std::size_t> Schedule::load_after_steps() const {
  std::vector<std::size_t> out;
  out.reserve(steps.size());
  std::size_t load = persistent_bytes;
  for (const Step& st : steps) {
    if (st.kind == StepKind::alloc) load += round_up(tensors[st.tensor].info.bytes());
    if (st.kind == StepKind::free) load -= round_up(tensors[st.tensor].info.bytes());
    out.push_back(load);
  }
  return out;
}

}  // namespace tidepool
