#include "ui/scene/memory_load.h"

#include <algorithm>
#include <set>

#include "ui/scene/generation.h"

namespace tidepool::ui {

MemoryLoadScene build_memory_load(const RingSnapshot& events, std::size_t budget_bytes, int iterations,
                                  std::int64_t batch, std::size_t load_limit_bytes, bool computes_values) {
  MemoryLoadScene scene;
  scene.generation = next_scene_generation();
  scene.budget_bytes = budget_bytes;
  scene.load_limit_bytes = load_limit_bytes;
  scene.computes_values = computes_values;
  std::set<std::int64_t> keep;  // the newest iterations that have samples
  for (auto it = events.loads.rbegin(); it != events.loads.rend(); ++it) {
    if (it->iteration < 0) continue;  // the set-up placement is not an iteration
    if (!keep.count(it->iteration)) {
      if (static_cast<int>(keep.size()) == iterations) break;
      keep.insert(it->iteration);
    }
  }
  for (const LoadSample& s : events.loads) {
    if (!keep.count(s.iteration)) continue;
    if (s.load_bytes > scene.peak_load_bytes || scene.points.empty()) {
      scene.peak_load_bytes = std::max(scene.peak_load_bytes, s.load_bytes);
      if (s.load_bytes == scene.peak_load_bytes) scene.peak_index = scene.points.size();
    }
    scene.max_extent_bytes = std::max(scene.max_extent_bytes, s.extent_bytes);
    scene.points.push_back({s.iteration, s.step, s.time_us, s.load_bytes, s.extent_bytes});
  }
  for (const IterationSummary& s : events.iterations) {
    IterationPoint p;
    p.iteration = s.iteration;
    p.peak_load_bytes = s.peak_load_bytes;
    p.footprint_bytes = s.footprint_bytes;
    p.loss = s.loss;
    p.accuracy = s.accuracy;
    p.seconds = (s.end_us - s.start_us) * 1e-6;
    p.images_per_second = p.seconds > 0 ? static_cast<double>(batch) / p.seconds : 0;
    scene.iterations.push_back(p);
  }
  return scene;
}

}  // namespace tidepool::ui
