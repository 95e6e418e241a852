#include "ui/views/fragmentation_view.h"

#include <algorithm>

#include "engine/memory/allocator.h"
#include "ui/scene/colours.h"

namespace tidepool::ui {
namespace {

// A distinct, stable colour per block id, so a block keeps its colour in
// every heuristic's column.
ImU32 block_colour(std::int64_t id) {
  static constexpr std::uint32_t kPalette[] = {0x4C9BE8, 0xE8664C, 0x5CBF6A, 0xC678DD, 0xE8B04C,
                                               0x3CC8E8, 0xD05C9A, 0xA8D86A, 0x8C8CE8, 0xE8D84C};
  return im_colour(kPalette[static_cast<std::size_t>(id) % std::size(kPalette)]);
}

}  // namespace

FragmentationView::FragmentationView() : sequences_(paper_sequences()) { select(0); }

void FragmentationView::select(int sequence) {
  if (sequence == selected_ || sequence < 0 || sequence >= static_cast<int>(sequences_.size())) return;
  selected_ = sequence;
  replay_ = replay_fragmentation(sequences_[static_cast<std::size_t>(sequence)], allocator_names());
  event_ = 0;
  playing_ = false;
}

void FragmentationView::play_to(int events) {
  if (!replay_) return;
  const int size = static_cast<int>(sequences_[static_cast<std::size_t>(selected_)].trace.size());
  event_ = std::clamp(events, 0, size);
  playing_ = false;
}

void FragmentationView::draw() {
  if (!replay_) return;
  const PaperSequence& seq = sequences_[static_cast<std::size_t>(selected_)];
  if (ImGui::BeginCombo("sequence", seq.title.c_str())) {
    for (int i = 0; i < static_cast<int>(sequences_.size()); ++i)
      if (ImGui::Selectable(sequences_[static_cast<std::size_t>(i)].title.c_str(), i == selected_)) select(i);
    ImGui::EndCombo();
  }
  const PaperSequence& s = sequences_[static_cast<std::size_t>(selected_)];
  ImGui::TextWrapped("%s", s.explanation.c_str());
  const int events = static_cast<int>(s.trace.size());

  if (ImGui::Button("|<")) event_ = 0;
  ImGui::SameLine();
  if (ImGui::Button("< step")) event_ = std::max(event_ - 1, 0);
  ImGui::SameLine();
  if (ImGui::Button("step >")) event_ = std::min(event_ + 1, events);
  ImGui::SameLine();
  if (ImGui::Button(playing_ ? "pause" : "play")) playing_ = !playing_;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(200);
  ImGui::SliderInt("events played", &event_, 0, events);
  const auto now = std::chrono::steady_clock::now();
  if (playing_ && now - last_advance_ > std::chrono::milliseconds(900)) {
    last_advance_ = now;
    if (event_ < events) ++event_;
    else playing_ = false;
  }
  ImGui::Text("%s", event_ == 0 ? "before the first event"
                                : ("after " + replay_->event_labels[static_cast<std::size_t>(event_ - 1)]).c_str());

  // One column per heuristic: its pool, address up, after the events so far.
  const Canvas c = begin_canvas("pools");
  ImDrawList* d = c.draw;
  const int n = static_cast<int>(replay_->heuristics.size());
  const float col_w = c.width() / static_cast<float>(std::max(n, 1));
  const float y_top = c.min.y + 34, y_bottom = c.max.y - 64;
  const double pool = static_cast<double>(std::max<std::size_t>(replay_->pool_bytes, 1));
  auto y_of = [&](std::size_t bytes) { return y_bottom - static_cast<float>(static_cast<double>(bytes) / pool) * (y_bottom - y_top); };
  const double unit = static_cast<double>(std::max<std::size_t>(replay_->unit_bytes, 1));
  for (int h = 0; h < n; ++h) {
    const HeuristicReplay& r = replay_->heuristics[static_cast<std::size_t>(h)];
    const ReplayFrame& f = event_ == 0 ? r.start : r.frames[static_cast<std::size_t>(event_ - 1)];
    const float x0 = c.min.x + col_w * static_cast<float>(h) + 14, x1 = x0 + col_w - 28;
    d->AddText({x0, c.min.y + 4}, IM_COL32(230, 230, 230, 255), r.heuristic.c_str());
    d->AddRectFilled({x0, y_top}, {x1, y_bottom}, im_colour(kHole));
    for (std::size_t boundary : f.pool_boundaries)  // cnmem's pools never merge
      d->AddLine({x0 - 4, y_of(boundary)}, {x1 + 4, y_of(boundary)}, IM_COL32(255, 255, 255, 200), 1.5f);
    for (const ReplayBlock& b : f.live) {
      const float by0 = y_of(b.end()), by1 = y_of(b.offset);
      d->AddRectFilled({x0, by0}, {x1, by1}, block_colour(b.id));
      d->AddRect({x0, by0}, {x1, by1}, IM_COL32(0, 0, 0, 160));
      char label[32];
      std::snprintf(label, sizeof label, "#%lld %.3g u", static_cast<long long>(b.id), static_cast<double>(b.bytes) / unit);
      if (by1 - by0 > 13) d->AddText({x0 + 3, by0 + 1}, IM_COL32(10, 10, 10, 255), label);
    }
    const float ye = y_of(f.extent_bytes);
    d->AddLine({x0 - 6, ye}, {x1 + 6, ye}, im_colour(kExtent), 2.0f);
    d->AddRect({x0, y_top}, {x1, y_bottom}, IM_COL32(200, 200, 200, 150));
    if (f.failed) {
      d->AddRect({x0 - 3, y_top - 3}, {x1 + 3, y_bottom + 3}, IM_COL32(255, 60, 60, 255), 0, 0, 3.0f);
      char text[48];
      std::snprintf(text, sizeof text, "cannot place %.3g u", static_cast<double>(f.failed_request_bytes) / unit);
      d->AddText({x0, y_top - 16}, IM_COL32(255, 90, 90, 255), text);
    }
    char figures[96];
    std::snprintf(figures, sizeof figures, "load %.3g u\nextent %.3g u\nlargest hole %.3g u",
                  static_cast<double>(f.load_bytes) / unit, static_cast<double>(f.extent_bytes) / unit,
                  static_cast<double>(f.largest_free_below_extent_bytes) / unit);
    d->AddText({x0, y_bottom + 4}, IM_COL32(210, 210, 210, 255), figures);
    if (event_ == events) {
      std::snprintf(figures, sizeof figures, "%s, ratio %.2f", r.served() ? "served" : "failed", r.competitive_ratio);
      d->AddText({x0, y_bottom + 46}, r.served() ? IM_COL32(120, 230, 120, 255) : IM_COL32(255, 90, 90, 255), figures);
    }
  }
}

}  // namespace tidepool::ui
