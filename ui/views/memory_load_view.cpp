#include "ui/views/memory_load_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ui/paint/memory_load_picture.h"
#include "ui/scene/iteration_number.h"

namespace tidepool::ui {
namespace {

// The summary of the iteration nearest to `shown`, a panel's x (which
// counts iterations from 1).
const IterationPoint& nearest(const std::vector<IterationPoint>& iterations, double shown) {
  auto away = [&](const IterationPoint& p) { return std::abs(static_cast<double>(shown_iteration(p.iteration)) - shown); };
  return *std::min_element(iterations.begin(), iterations.end(),
                           [&](const IterationPoint& a, const IterationPoint& b) { return away(a) < away(b); });
}

}  // namespace

void MemoryLoadView::draw(const Frame& frame) {
  const MemoryLoadScene& scene = frame.load;
  if (scene.points.empty()) {
    waiting_text(frame.status);
    return;
  }
  const Canvas c = begin_canvas("memory load");
  paint::ImGuiPainter painter(c.draw);
  const paint::MemoryLoadLayout layout = paint::memory_load_layout(painter, scene, c.area(), &picture_);
  // The sample under the pointer is marked on the curves; over a panel, the
  // iteration under it is told in full.
  const ImGuiIO& io = ImGui::GetIO();
  const paint::Point mouse{io.MousePos.x, io.MousePos.y};
  paint::MemoryLoadFocus focus;
  if (c.hovered && layout.curves.contains(mouse)) {
    const double at = std::floor(layout.x.invert(mouse.x));
    focus.sample = std::clamp(static_cast<int>(at), 0, static_cast<int>(scene.points.size()) - 1);
  }
  paint::draw_memory_load(painter, scene, c.area(), focus, &picture_);

  if (focus.sample >= 0) {
    const LoadPoint& p = scene.points[static_cast<std::size_t>(focus.sample)];
    ImGui::SetTooltip("iteration %lld, step %d\nload %s\nextent %s", static_cast<long long>(shown_iteration(p.iteration)), p.step,
                      format_bytes(p.load_bytes).c_str(), format_bytes(p.extent_bytes).c_str());
    return;
  }
  for (std::size_t i = 0; i < layout.panels.size(); ++i) {
    if (!c.hovered || !layout.panels[i].contains(mouse) || scene.iterations.empty()) continue;
    const IterationPoint& it = nearest(scene.iterations, layout.panel_x[i].invert(mouse.x));
    char numbers[96];
    if (scene.computes_values)
      std::snprintf(numbers, sizeof numbers, "loss %.4f\naccuracy %.1f %% of the batch", it.loss, 100.0 * it.accuracy);
    else
      std::snprintf(numbers, sizeof numbers, "loss, accuracy: %s", kNoNumbers);
    ImGui::SetTooltip("iteration %lld\npeak load %s\nfootprint %s\n%s\n%.1f images/s",
                      static_cast<long long>(shown_iteration(it.iteration)), format_bytes(it.peak_load_bytes).c_str(),
                      format_bytes(it.footprint_bytes).c_str(), numbers, it.images_per_second);
  }
}

}  // namespace tidepool::ui
