#include "ui/views/memory_load_view.h"

#include <algorithm>
#include <vector>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

// One small history plot with its latest value in the overlay.
void history(const char* label, const std::vector<float>& values, const char* format, float height) {
  char overlay[64] = "";
  if (!values.empty()) std::snprintf(overlay, sizeof overlay, format, values.back());
  ImGui::PlotLines(label, values.data(), static_cast<int>(values.size()), 0, overlay, FLT_MAX, FLT_MAX,
                   {ImGui::GetContentRegionAvail().x - 90, height});
}

}  // namespace

void MemoryLoadView::draw(const Frame& frame) {
  const MemoryLoadScene& scene = frame.load;
  if (scene.points.empty()) {
    waiting_text(frame.status);
    return;
  }
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(im_colour(kLoad)), "load");
  ImGui::SameLine();
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(im_colour(kExtent)), "extent");
  ImGui::SameLine();
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(im_colour(kBudget)), "budget %s",
                     format_bytes(scene.budget_bytes).c_str());
  ImGui::SameLine();
  ImGui::Text("| peak %s", format_bytes(scene.peak_load_bytes).c_str());

  const float history_h = 44;
  const float curves_h = std::max(ImGui::GetContentRegionAvail().y - 5 * (history_h + ImGui::GetStyle().ItemSpacing.y), 80.0f);
  const Canvas c = begin_canvas("memory load", {0, curves_h});
  ImDrawList* d = c.draw;
  const float x0 = c.min.x + 4, x1 = c.max.x - 4, y_top = c.min.y + 16, y_bottom = c.max.y - 4;
  const double top = static_cast<double>(std::max({scene.budget_bytes, scene.max_extent_bytes, scene.peak_load_bytes,
                                                   std::size_t{1}})) * 1.05;
  const std::size_t n = scene.points.size();
  auto x_of = [&](std::size_t i) { return x0 + (x1 - x0) * static_cast<float>(i) / static_cast<float>(std::max<std::size_t>(n - 1, 1)); };
  auto y_of = [&](std::size_t bytes) { return y_bottom - static_cast<float>(static_cast<double>(bytes) / top) * (y_bottom - y_top); };
  // Iteration boundaries.
  for (std::size_t i = 1; i < n; ++i)
    if (scene.points[i].iteration != scene.points[i - 1].iteration)
      d->AddLine({x_of(i), y_top}, {x_of(i), y_bottom}, IM_COL32(90, 90, 110, 255));
  std::vector<ImVec2> load(n), extent(n);
  for (std::size_t i = 0; i < n; ++i) {
    load[i] = {x_of(i), y_of(scene.points[i].load_bytes)};
    extent[i] = {x_of(i), y_of(scene.points[i].extent_bytes)};
  }
  d->AddPolyline(extent.data(), static_cast<int>(n), im_colour(kExtent), 0, 1.5f);
  d->AddPolyline(load.data(), static_cast<int>(n), im_colour(kLoad), 0, 2.0f);
  if (scene.budget_bytes) {
    const float yb = y_of(scene.budget_bytes);
    d->AddLine({x0, yb}, {x1, yb}, im_colour(kBudget), 2.0f);
    plot_label(d, {x0 + 4, yb - 15}, im_colour(kBudget), "budget " + format_bytes(scene.budget_bytes));
  }
  if (scene.load_limit_bytes) {  // AutoSwap offloads what keeps the load under this
    const float yl = y_of(scene.load_limit_bytes);
    d->AddLine({x0, yl}, {x1, yl}, im_colour(kLoadLimit), 1.0f);
    plot_label(d, {x0 + 4, yl + 2}, im_colour(kLoadLimit), "AutoSwap load limit " + format_bytes(scene.load_limit_bytes));
  }
  const ImVec2 peak = load[std::min(scene.peak_index, n - 1)];
  d->AddCircleFilled(peak, 5, IM_COL32(255, 255, 255, 255));
  plot_label(d, {std::min(peak.x + 6, x1 - 120), peak.y - 16}, IM_COL32(255, 255, 255, 255),
             "peak " + format_bytes(scene.peak_load_bytes));
  if (c.hovered) {
    const float mx = ImGui::GetIO().MousePos.x;
    const std::size_t i = std::min<std::size_t>(n - 1, static_cast<std::size_t>(std::max(0.0f, (mx - x0) / (x1 - x0)) * static_cast<float>(n - 1) + 0.5f));
    const LoadPoint& p = scene.points[i];
    ImGui::SetTooltip("iteration %lld, step %d\nload %s\nextent %s", static_cast<long long>(p.iteration), p.step,
                      format_bytes(p.load_bytes).c_str(), format_bytes(p.extent_bytes).c_str());
  }

  // Across the run, one value per iteration.
  std::vector<float> peak_mib, footprint_mib, loss, accuracy, rate;
  for (const IterationPoint& p : scene.iterations) {
    peak_mib.push_back(static_cast<float>(p.peak_load_bytes) / (1024.0f * 1024.0f));
    footprint_mib.push_back(static_cast<float>(p.footprint_bytes) / (1024.0f * 1024.0f));
    loss.push_back(p.loss);
    accuracy.push_back(100.0f * p.accuracy);
    rate.push_back(static_cast<float>(p.images_per_second));
  }
  history("peak load", peak_mib, "%.1f MiB", history_h);
  history("footprint", footprint_mib, "%.1f MiB", history_h);
  history("loss", loss, "%.4f", history_h);
  history("accuracy", accuracy, "%.1f %% of the batch", history_h);
  history("images/s", rate, "%.1f", history_h);
}

}  // namespace tidepool::ui
