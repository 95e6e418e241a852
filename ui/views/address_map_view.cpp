#include "ui/views/address_map_view.h"

#include <algorithm>

#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

constexpr float kAxisWidth = 64;
constexpr float kStripWidth = 46;
constexpr float kStripGap = 14;

}  // namespace

void AddressMapView::draw(const Frame& frame) {
  const AddressMapScene& map = frame.map;
  if (map.empty()) {
    waiting_text(frame.status);
    return;
  }
  ImGui::TextWrapped("iteration %lld: peak load %s, footprint %s (ratio %.3f), pool %s", static_cast<long long>(map.iteration),
              format_bytes(map.peak_load_bytes).c_str(),
              format_bytes(map.footprint_bytes).c_str(),
              map.peak_load_bytes ? static_cast<double>(map.footprint_bytes) / static_cast<double>(map.peak_load_bytes) : 0.0,
              format_bytes(map.pool_bytes).c_str());
  ImGui::TextUnformatted("");  // the legend starts a line of its own
  for (Role r : {Role::input, Role::activation, Role::activation_gradient, Role::weight, Role::weight_gradient,
                 Role::optimizer_state, Role::workspace})
    legend_item(role_colour(r), std::string(to_string(r)));
  legend_item(kInFlightToHost, "to host");
  legend_item(kInFlightFromHost, "from host");
  legend_item(kParked, "parked");
  const Canvas c = begin_canvas("address map");
  ImDrawList* d = c.draw;
  const float x0 = c.min.x + kAxisWidth, x1 = c.max.x - kStripWidth - kStripGap;
  const float y_top = c.min.y + 6, y_bottom = c.max.y - 16;
  const double top_bytes = static_cast<double>(std::max({map.pool_bytes, map.footprint_bytes, std::size_t{1}}));
  const float step_w = (x1 - x0) / static_cast<float>(std::max(map.steps, 1));
  auto y_of = [&](double bytes) { return y_bottom - static_cast<float>(bytes / top_bytes) * (y_bottom - y_top); };
  auto x_of = [&](int step) { return x0 + step_w * static_cast<float>(step); };

  // Axis: bytes at a few heights.
  for (int i = 0; i <= 4; ++i) {
    const double b = top_bytes * i / 4;
    const float y = y_of(b);
    d->AddLine({x0 - 4, y}, {x0, y}, IM_COL32(180, 180, 180, 255));
    d->AddText({c.min.x + 2, y - 7}, IM_COL32(180, 180, 180, 255), format_bytes(static_cast<std::size_t>(b)).c_str());
  }
  d->AddText({x0, y_bottom + 1}, IM_COL32(150, 150, 150, 255), "step 0");
  d->AddText({x1 - 60, y_bottom + 1}, IM_COL32(150, 150, 150, 255), ("step " + std::to_string(map.steps)).c_str());

  ImGuiIO& io = ImGui::GetIO();
  const MapBlock* hovered = nullptr;
  int hovered_step = -1;
  if (c.hovered && io.MousePos.x >= x0 && io.MousePos.x < x1)
    hovered_step = std::clamp(static_cast<int>((io.MousePos.x - x0) / step_w), 0, map.steps - 1);
  for (const MapBlock& b : map.blocks) {
    const float bx0 = x_of(b.first_step), bx1 = std::max(x_of(b.last_step + 1), bx0 + 1);
    const float by0 = y_of(static_cast<double>(b.end())), by1 = std::max(y_of(static_cast<double>(b.offset)), by0 + 1);
    d->AddRectFilled({bx0, by0}, {bx1, by1}, im_colour(role_colour(b.role)));
    if (b.parked_until_step > b.last_step) {  // dead but taken: the role's colour, faded and outlined
      const float px1 = std::max(x_of(b.parked_until_step + 1), bx1 + 1);
      d->AddRectFilled({bx1, by0}, {px1, by1}, im_colour(role_colour(b.role), 0.3f));
      d->AddRect({bx1, by0}, {px1, by1}, im_colour(kParked));
      if (c.hovered && io.MousePos.x >= bx1 && io.MousePos.x <= px1 && io.MousePos.y >= by0 && io.MousePos.y <= by1)
        hovered = &b;
    }
    if (b.offload_step >= 0)
      d->AddRectFilled({x_of(b.offload_step), by0}, {bx1, by1}, im_colour(kInFlightToHost));
    if (b.prefetch_done_step >= 0)
      d->AddRectFilled({bx0, by0}, {std::max(x_of(b.prefetch_done_step + 1), bx0 + 1), by1}, im_colour(kInFlightFromHost));
    if (by1 - by0 > 3 && bx1 - bx0 > 3) d->AddRect({bx0, by0}, {bx1, by1}, IM_COL32(0, 0, 0, 90));
    if (c.hovered && io.MousePos.x >= bx0 && io.MousePos.x <= bx1 && io.MousePos.y >= by0 && io.MousePos.y <= by1)
      hovered = &b;
  }
  // The footprint and the pool (the budget).
  const float yf = y_of(static_cast<double>(map.footprint_bytes));
  d->AddLine({x0, yf}, {x1, yf}, im_colour(kExtent), 1.5f);
  // Labelled at the right, just under the line: the left edge holds the
  // axis, and above the line may be the top of the plot.
  const std::string footprint = "footprint " + format_bytes(map.footprint_bytes);
  plot_label(d, {x1 - ImGui::CalcTextSize(footprint.c_str()).x - 4, yf + 2}, im_colour(kExtent), footprint);
  const float yp = y_of(static_cast<double>(map.pool_bytes));
  d->AddLine({x0, yp}, {x1, yp}, im_colour(kBudget), 1.5f);
  // The peak and the largest free block then: the hole a request larger
  // than it could not have used, whatever the free total.
  const float xpk = x_of(map.peak_step) + step_w * 0.5f;
  d->AddLine({xpk, y_top}, {xpk, y_bottom}, IM_COL32(255, 255, 255, 110));
  if (map.largest_free_at_peak) {
    const auto& h = *map.largest_free_at_peak;
    const float hy0 = y_of(static_cast<double>(h.offset + h.bytes)), hy1 = y_of(static_cast<double>(h.offset));
    d->AddRect({x0, hy0}, {x1, std::max(hy1, hy0 + 2)}, im_colour(kLargestHole), 0, 0, 2.0f);
    // Right of the peak line, or left of it where the plot ends first.
    const std::string label = "largest free at peak " + format_bytes(h.bytes);
    const float width = ImGui::CalcTextSize(label.c_str()).x;
    const float lx = xpk + 4 + width <= x1 ? xpk + 4 : std::max(x0, xpk - 4 - width);
    plot_label(d, {lx, hy0 + 1}, im_colour(kLargestHole), label);
  }

  // The occupancy strip: the pool at one step, bottom to top.
  const int strip_step = hovered_step >= 0 ? hovered_step : map.peak_step;
  const Occupancy o = occupancy_at(map, strip_step);
  const float sx0 = c.max.x - kStripWidth, sx1 = c.max.x - 4;
  d->AddRectFilled({sx0, y_top}, {sx1, y_bottom}, im_colour(kHole));
  for (const MapBlock* b : o.live)
    d->AddRectFilled({sx0, y_of(static_cast<double>(b->end()))}, {sx1, std::max(y_of(static_cast<double>(b->offset)), y_of(static_cast<double>(b->end())) + 1)},
                     im_colour(role_colour(b->role)));
  for (const MapBlock* b : o.parked)
    d->AddRectFilled({sx0, y_of(static_cast<double>(b->end()))}, {sx1, std::max(y_of(static_cast<double>(b->offset)), y_of(static_cast<double>(b->end())) + 1)},
                     im_colour(role_colour(b->role), 0.3f));
  d->AddRect({sx0, y_top}, {sx1, y_bottom}, IM_COL32(200, 200, 200, 160));
  const float xs = x_of(strip_step);
  d->AddRect({xs, y_top}, {xs + std::max(step_w, 1.0f), y_bottom}, IM_COL32(255, 255, 255, 60));

  if (hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("%s", hovered->name.c_str());
    ImGui::Separator();
    ImGui::Text("layer     %s", hovered->name.substr(0, hovered->name.find('.')).c_str());
    ImGui::Text("role      %s", std::string(to_string(hovered->role)).c_str());
    ImGui::Text("offset    %s (%zu)", format_bytes(hovered->offset).c_str(), hovered->offset);
    ImGui::Text("size      %s", format_bytes(hovered->bytes).c_str());
    if (hovered->persistent) ImGui::Text("lifetime  the whole run (placed once)");
    else ImGui::Text("lifetime  steps %d to %d", hovered->first_step, hovered->last_step);
    if (hovered->offload_step >= 0) ImGui::Text("offloaded from step %d", hovered->offload_step);
    if (hovered->prefetch_done_step >= 0) ImGui::Text("prefetched, back by step %d", hovered->prefetch_done_step);
    if (hovered->parked_until_step > hovered->last_step)
      ImGui::Text("parked steps %d to %d: dead, but kept from reuse while its copy to the host runs",
                  hovered->last_step + 1, hovered->parked_until_step);
    ImGui::EndTooltip();
  } else if (hovered_step >= 0) {
    ImGui::BeginTooltip();
    const StepPool& p = map.after_step[static_cast<std::size_t>(strip_step)];
    ImGui::Text("step %d: load %s, extent %s, largest free below it %s", strip_step, format_bytes(p.load_bytes).c_str(),
                format_bytes(p.extent_bytes).c_str(), format_bytes(p.largest_free_bytes).c_str());
    ImGui::EndTooltip();
  }
}

}  // namespace tidepool::ui
