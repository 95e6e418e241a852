#include "ui/views/address_map_view.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ui/paint/address_map_picture.h"

namespace tidepool::ui {
namespace {

// What a block is (block_details), and for a trace that records call
// stacks (a PyTorch snapshot) the stack that allocated it.
void block_tooltip(const MapBlock& b, const SessionLink& link) {
  const std::string stack = link.block_stack(b.tensor);
  const std::vector<std::string> lines = block_details(b, !stack.empty());
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(lines.front().c_str());
  ImGui::Separator();
  for (std::size_t i = 1; i < lines.size(); ++i) ImGui::TextUnformatted(lines[i].c_str());
  if (!stack.empty()) {  // a PyTorch snapshot's block: the stack that allocated it
    ImGui::Separator();
    ImGui::TextDisabled("allocated at (innermost first):");
    ImGui::TextUnformatted(stack.c_str());
  }
  ImGui::EndTooltip();
}

}  // namespace

void AddressMapView::draw(const Frame& frame) {
  const AddressMapScene& map = frame.map;
  if (map.empty()) {
    waiting_text(frame.status);
    return;
  }
  // Find, list, pin: a search that outlines the blocks whose names hold it,
  // the largest blocks alive at the peak (choosing one pins it), and the
  // pinned block's details, which stay while the pointer goes elsewhere. A
  // block is pinned by where it starts (BlockKey), so it stays pinned as
  // new iterations arrive.
  ImGui::SetNextItemWidth(std::min(220.0f, ImGui::GetContentRegionAvail().x / 3));
  ImGui::InputTextWithHint("##find", "find a tensor", search_, sizeof search_);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::min(220.0f, ImGui::GetContentRegionAvail().x / 2));
  if (ImGui::BeginCombo("##largest", "largest at the peak", ImGuiComboFlags_HeightLarge)) {
    int row = 0;
    for (const MapBlock* b : largest_at_peak(map, 20)) {
      ImGui::PushID(row++);
      if (ImGui::Selectable((format_bytes(b->bytes) + "  " + b->name).c_str(), pinned_ && key_of(*b) == *pinned_))
        pinned_ = key_of(*b);
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  const MapBlock* pinned = pinned_ ? paint::find_block(map, *pinned_, &picture_) : nullptr;
  if (pinned) {
    ImGui::SameLine();
    if (ImGui::SmallButton("unpin")) {
      pinned = nullptr;
      pinned_.reset();
    }
  }
  if (pinned) {
    std::string line;
    for (std::string part : block_details(*pinned, !frame.link.block_stack(pinned->tensor).empty())) {
      // The tooltip's columns, as one line: "role      activation" reads "role activation".
      part.erase(std::unique(part.begin(), part.end(), [](char a, char b) { return a == ' ' && b == ' '; }), part.end());
      line += (line.empty() ? "pinned: " : "  |  ") + part;
    }
    ImGui::TextWrapped("%s", line.c_str());
  }

  const Canvas c = begin_canvas("address map");
  paint::ImGuiPainter painter(c.draw);
  const paint::AddressMapLayout layout = paint::address_map_layout(painter, map, c.area(), &picture_);
  // The step under the pointer: its column is marked and the strip beside
  // the plot shows the pool then; the block under it gets a tooltip, and a
  // click pins it (a click off every block unpins).
  const ImGuiIO& io = ImGui::GetIO();
  const paint::Point mouse{io.MousePos.x, io.MousePos.y};
  paint::AddressMapFocus focus{.search = search_, .pinned = pinned};
  const MapBlock* hovered = nullptr;
  if (c.hovered && layout.plot.contains(mouse) && map.steps > 0) {
    focus.step = std::clamp(static_cast<int>(std::floor(layout.x.invert(mouse.x))), 0, map.steps - 1);
    hovered = paint::block_at(layout, map, mouse, &picture_);
  }
  if (c.hovered && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    pinned_ = hovered ? std::optional<BlockKey>(key_of(*hovered)) : std::nullopt;
    focus.pinned = hovered;
  }
  paint::draw_address_map(painter, map, c.area(), focus, &picture_);

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
