#include "engine/plan/accudnn_schedule.h"

#include <algorithm>
#include <limits>
#include <string>

#include "engine/memory/allocator.h"
#include "engine/memory/pool_search.h"
#include "engine/perf/step_work.h"

namespace tidepool {

namespace {

// A data-parallel bucket's all_reduce step packs it on the compute stream
// and its wait_all_reduce step unpacks it there: layers, like the others.
bool is_compute(StepKind k) {
  return k == StepKind::forward || k == StepKind::backward || k == StepKind::accumulate || k == StepKind::update ||
         k == StepKind::recompute ||
         k == StepKind::all_reduce || k == StepKind::wait_all_reduce;
}

std::string layer_name(const Network& net, const Schedule& s, const Step& st) {
  if (st.kind == StepKind::all_reduce || st.kind == StepKind::wait_all_reduce)
    return s.tensors[static_cast<std::size_t>(st.tensor)].info.name + (st.kind == StepKind::all_reduce ? " pack" : " unpack");
  std::string name = st.node >= 0 ? net.nodes()[static_cast<std::size_t>(st.node)].layer->name() : "sgd";
  return name + (st.kind == StepKind::forward || st.kind == StepKind::recompute ? " fwd" : st.kind == StepKind::backward ? " bwd" : st.kind == StepKind::accumulate ? " acc" : "");
}

std::size_t transient_budget(const Schedule& s, std::size_t pool_bytes) {
  if (!pool_bytes) return std::numeric_limits<std::size_t>::max() / 2;
  return pool_bytes > s.persistent_bytes ? pool_bytes - s.persistent_bytes : 0;
}

}  // namespace

AccSchedule accudnn_problem(const Network& net, const Schedule& s, const PerfModel& model, const KernelQueries& queries,
                            std::size_t budget_bytes, const CopyWaits* copy_waits) {
  AccSchedule out;
  AccProblem& p = out.problem;
  p.budget_bytes = transient_budget(s, budget_bytes);
  std::vector<int> map_of(s.tensors.size(), -1);
  std::vector<int> frees(s.tensors.size(), 0);
  std::size_t pending_alloc = 0;  // placed before the next compute step
  WorkCounter counter(queries);
  // Layer indices: `next` is the compute step to come, `last` the one before.
  auto next = [&] { return static_cast<int>(p.layers.size()); };
  auto last = [&] { return std::max(0, static_cast<int>(p.layers.size()) - 1); };
  std::vector<int> waits;  // maps whose needed_by is the next compute step
  std::vector<int> copies;  // maps whose offloads the next compute step waits for

  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& st = s.steps[static_cast<std::size_t>(i)];
    const int t = st.tensor;
    if (copy_waits)
      for (int x : copy_waits->at_step[static_cast<std::size_t>(i)])
        if (map_of[static_cast<std::size_t>(x)] >= 0) copies.push_back(map_of[static_cast<std::size_t>(x)]);
    if (is_compute(st.kind)) {
      const Work w = step_work(net, s, i, counter);
      p.layers.push_back({layer_name(net, s, st), model.compute_us(w), pending_alloc, 0, std::move(copies)});
      copies.clear();
      pending_alloc = 0;
      for (int m : waits) p.maps[static_cast<std::size_t>(m)].needed_by = last();
      waits.clear();
      continue;
    }
    const bool is_map = t >= 0 && s.tensors[static_cast<std::size_t>(t)].offloaded;
    const std::size_t bytes = t >= 0 ? round_up(s.tensors[static_cast<std::size_t>(t)].info.bytes()) : 0;
    switch (st.kind) {
      case StepKind::alloc:
        if (!is_map) {
          pending_alloc += bytes;
        } else if (map_of[t] < 0) {  // its first placement; the later one is the prefetch's
          map_of[t] = static_cast<int>(p.maps.size());
          out.map_tensor.push_back(t);
          AccFeatureMap m;
          m.name = s.tensors[static_cast<std::size_t>(t)].info.name;
          m.bytes = bytes;
          m.produced_by = next();
          const bool pageable = s.settings.memory.host_memory == HostMemory::pageable;
          m.offload_us = model.copy_us(s.tensors[static_cast<std::size_t>(t)].info.bytes(), true, pageable);
          m.prefetch_us = model.copy_us(s.tensors[static_cast<std::size_t>(t)].info.bytes(), false, pageable);
          m.reclaimed = copy_waits && copy_waits->reclaimed[static_cast<std::size_t>(t)];
          p.maps.push_back(std::move(m));
        }
        break;
      case StepKind::free:
        if (!is_map) {
          if (p.layers.empty()) break;  // nothing was placed before the first compute step that it could free
          p.layers[static_cast<std::size_t>(last())].release_bytes += bytes;
        } else if (++frees[t] == 2) {  // the first free is the offload's: the map leaves when its copy is done
          p.maps[static_cast<std::size_t>(map_of[t])].freed_after = last();
        }
        break;
      case StepKind::offload:
        if (is_map) p.maps[static_cast<std::size_t>(map_of[t])].offload_after = last();
        break;
      case StepKind::prefetch:
        if (is_map) p.maps[static_cast<std::size_t>(map_of[t])].fetch_after = p.layers.empty() ? -1 : last();
        break;
      case StepKind::wait_prefetch:
        if (is_map) waits.push_back(map_of[t]);
        break;
      default: break;
    }
  }
  return out;
}

namespace {

Prediction predict_with(const Network& net, const Schedule& s, const PerfModel& model, const KernelQueries& queries,
                        const CopyWaits* waits) {
  const AccSchedule a = accudnn_problem(net, s, model, queries, 0, waits);
  const AccTimeline t = ready_times(a.problem, {});
  Prediction out{t.iteration_us, t.total_stall_us};
  WorkCounter counter(queries);
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i)
    if (s.steps[static_cast<std::size_t>(i)].kind == StepKind::recompute) {
      const Work w = step_work(net, s, i, counter);
      out.recompute_us += model.compute_us(w);
      out.recompute_flops += static_cast<double>(w.flops);
    }
  return out;
}

}  // namespace

Prediction predict(const Network& net, const Schedule& s, const PerfModel& model, const KernelQueries& queries) {
  return predict_with(net, s, model, queries, nullptr);
}

Prediction predict_in_pool(const Network& net, const Schedule& s, const PerfModel& model, const KernelQueries& queries,
                           std::string_view heuristic, std::size_t pool_bytes) {
  const ScheduleTraces traces(s);
  return predict_in_pool(net, s, model, queries, heuristic, pool_bytes, traces,
                         park_in(s, traces, heuristic, pool_bytes).horizon);
}

Prediction predict_in_pool(const Network& net, const Schedule& s, const PerfModel& model, const KernelQueries& queries,
                           std::string_view heuristic, std::size_t pool_bytes, const ScheduleTraces& traces,
                           int park_horizon) {
  const CopyWaits waits = copy_waits(s, traces, heuristic, pool_bytes, park_horizon);
  return predict_with(net, s, model, queries, &waits);
}

AccudnnOffloads choose_accudnn_offloads(const Network& net, const Schedule& all, const PerfModel& model,
                                        const KernelQueries& queries, std::size_t pool_bytes) {
  const AccSchedule a = accudnn_problem(net, all, model, queries, pool_bytes);
  const AccChoice choice = choose_pinned(a.problem);
  AccudnnOffloads out;
  out.feasible = choice.feasible;
  for (std::size_t m = 0; m < a.map_tensor.size(); ++m)
    (choice.pinned.empty() || !choice.pinned[m] ? out.offloaded : out.pinned).push_back(a.map_tensor[m]);
  std::sort(out.offloaded.begin(), out.offloaded.end());
  std::sort(out.pinned.begin(), out.pinned.end());
  out.predicted = {choice.timeline.iteration_us, choice.timeline.total_stall_us};
  return out;
}

}  // namespace tidepool
