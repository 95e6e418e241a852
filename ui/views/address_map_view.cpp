#include "ui/views/address_map_view.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ui/paint/address_map_picture.h"

namespace tidepool::ui {
namespace {

// A block of a trace that records call stacks (a PyTorch snapshot): its
// label, where it sits, and the stack that allocated it.
void traced_block_tooltip(const MapBlock& b, const std::string& stack) {
  ImGui::BeginTooltip();
  ImGui::Text("%s", b.name.empty() ? "(no frames)" : b.name.c_str());
  ImGui::Separator();
  ImGui::Text("offset    %s (%zu)", format_bytes(b.offset).c_str(), b.offset);
  ImGui::Text("size      %s", format_bytes(b.bytes).c_str());
  ImGui::Text("lifetime  events %d to %d", b.first_step, b.last_step);
  ImGui::Separator();
  ImGui::TextDisabled("allocated at (innermost first):");
  ImGui::TextUnformatted(stack.c_str());
  ImGui::EndTooltip();
}

void block_tooltip(const MapBlock& b, const SessionLink& link) {
  if (const std::string stack = link.block_stack(b.tensor); !stack.empty()) return traced_block_tooltip(b, stack);
  ImGui::BeginTooltip();
  ImGui::Text("%s", b.name.c_str());
  ImGui::Separator();
  ImGui::Text("layer     %s", b.name.substr(0, b.name.find('.')).c_str());
  ImGui::Text("role      %s", std::string(to_string(b.role)).c_str());
  ImGui::Text("offset    %s (%zu)", format_bytes(b.offset).c_str(), b.offset);
  ImGui::Text("size      %s", format_bytes(b.bytes).c_str());
  if (b.persistent) ImGui::Text("lifetime  the whole run (placed once)");
  else ImGui::Text("lifetime  steps %d to %d", b.first_step, b.last_step);
  if (b.offload_step >= 0) ImGui::Text("offloaded from step %d", b.offload_step);
  if (b.prefetch_done_step >= 0) ImGui::Text("prefetched, back by step %d", b.prefetch_done_step);
  if (b.parked_until_step > b.last_step)
    ImGui::Text("parked steps %d to %d: dead, but kept from reuse while its copy to the host runs", b.last_step + 1,
                b.parked_until_step);
  ImGui::EndTooltip();
}

}  // namespace

void AddressMapView::draw(const Frame& frame) {
  const AddressMapScene& map = frame.map;
  if (map.empty()) {
    waiting_text(frame.status);
    return;
  }
  const Canvas c = begin_canvas("address map");
  paint::ImGuiPainter painter(c.draw);
  const paint::AddressMapLayout layout = paint::address_map_layout(painter, map, c.area());
  // The step under the pointer: its column is marked and the strip beside
  // the plot shows the pool then; the block under it gets a tooltip.
  const ImGuiIO& io = ImGui::GetIO();
  const paint::Point mouse{io.MousePos.x, io.MousePos.y};
  paint::AddressMapFocus focus;
  const MapBlock* hovered = nullptr;
  if (c.hovered && layout.plot.contains(mouse) && map.steps > 0) {
    focus.step = std::clamp(static_cast<int>(std::floor(layout.x.invert(mouse.x))), 0, map.steps - 1);
    for (const MapBlock& b : map.blocks)
      if (layout.life_box(b).contains(mouse) || layout.parked_box(b).contains(mouse)) hovered = &b;
  }
  paint::draw_address_map(painter, map, c.area(), focus);

  if (hovered) {
    block_tooltip(*hovered, frame.link);
  } else if (focus.step >= 0 && static_cast<std::size_t>(focus.step) < map.after_step.size()) {
    const StepPool& p = map.after_step[static_cast<std::size_t>(focus.step)];
    ImGui::SetTooltip("step %d: load %s, extent %s, largest free below it %s", focus.step,
                      format_bytes(p.load_bytes).c_str(), format_bytes(p.extent_bytes).c_str(),
                      format_bytes(p.largest_free_bytes).c_str());
  }
}

}  // namespace tidepool::ui
