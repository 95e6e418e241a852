#include "ui/views/controls_view.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/plan/memory_facts.h"

namespace tidepool::ui {
namespace {

// A combo over the values of an enum's table (engine/core/choices.h), each
// value's help on hover; true when the user picked another.
template <HasChoices E>
bool enum_combo(const char* label, E& value) {
  bool changed = false;
  if (ImGui::BeginCombo(label, to_string(value))) {
    for (const Choice<E>& c : choices(E{})) {
      if (ImGui::Selectable(c.name, c.value == value)) {
        changed = c.value != value;
        value = c.value;
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", c.help);
    }
    ImGui::EndCombo();
  }
  return changed;
}

// The width of the combos and sliders: what the view has left beside the
// longest of their labels, so that no label is cut in a narrow panel (the
// Controls column at 1280x720), and no more than 55 % of the view.
float item_width(std::initializer_list<const char*> labels) {
  float label = 0;
  for (const char* l : labels) label = std::max(label, ImGui::CalcTextSize(l).x);
  const float avail = ImGui::GetContentRegionAvail().x;
  return std::clamp(avail - label - ImGui::GetStyle().ItemInnerSpacing.x, avail * 0.35f, avail * 0.55f);
}

// A line of secondary text (ImGui's disabled colour), wrapped to the view.
void hint_text(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

// Why a run failed or diverged, in red, wrapped: the message names where,
// and a narrow panel must show all of it.
void error_text(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4{1, 0.4f, 0.4f, 1});
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

}  // namespace

void ControlsView::draw(const Frame& frame) {
  const SessionStatus& s = frame.status;
  SessionLink& link = frame.link;
  if (s.state == RunState::snapshot) return draw_snapshot(s, link);
  // A recorded run shows the settings it was trained with, every input
  // disabled: there is no session to send a change to.
  const bool read_only = link.read_only();
  if (sent_at_ && s.requests > *sent_at_) sent_at_.reset();
  if (read_only || (!editing_ && !sent_at_)) {
    edit_ = s.settings.memory;
    automatic_budget_ = s.settings.memory.budget_bytes == 0;
    editing_ = false;
  }

  if (read_only) {
    draw_recorded(s);
  } else {
    // Run control. A diverged session trains no more: nothing to resume.
    const bool paused = s.state == RunState::paused;
    ImGui::BeginDisabled(s.state == RunState::diverged);
    if (ImGui::Button(paused ? "Resume" : "Pause")) paused ? link.resume() : link.pause();
    ImGui::SameLine();
    if (ImGui::Button("Step one iteration")) link.step();
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::TextWrapped("%s, iteration %lld/%lld", to_string(s.state), static_cast<long long>(s.iteration),
                       static_cast<long long>(s.total_iterations));
    if (s.state == RunState::failed || s.state == RunState::diverged) error_text(s.error);
    draw_capture(s, link);
  }
  ImGui::Separator();

  ImGui::BeginDisabled(read_only);
  const bool changed = draw_settings(s);
  ImGui::EndDisabled();
  if (read_only) return;
  if (changed) editing_ = true;

  ImGui::BeginDisabled(!editing_);
  if (ImGui::Button("Apply at the next iteration")) {
    sent_at_ = s.requests;
    link.request(edit_);
    editing_ = false;
  }
  ImGui::SameLine();
  if (ImGui::Button("Revert")) editing_ = false;
  ImGui::EndDisabled();

  if (sent_at_) {
    ImGui::TextColored({0.9f, 0.85f, 0.4f, 1}, "%s",
                       s.replanning ? "planning the new settings; the next iteration waits for them..."
                                    : "waiting for the next iteration boundary...");
  } else if (s.requests > 0) {
    if (s.refused) ImGui::TextColored({1, 0.45f, 0.45f, 1}, "%s", s.message.c_str());
    else ImGui::TextColored({0.5f, 0.9f, 0.5f, 1}, "%s", s.message.c_str());
  }
  ImGui::TextWrapped("Changes re-plan and re-place the network before the next iteration; training goes on. "
                     "A setting that cannot work is refused and nothing changes.");
}

// "Record the next K iterations": into the run folder, beside the
// iterations it traced when it started (app/capture_recorder.h).
void ControlsView::draw_capture(const SessionStatus& s, SessionLink& link) {
  const bool training = s.state == RunState::training || s.state == RunState::paused;
  ImGui::BeginDisabled(!s.can_capture || !training);
  ImGui::PushItemWidth(ImGui::CalcTextSize("0000").x + 2 * ImGui::GetFrameHeight());
  ImGui::InputInt("##capture iterations", &capture_iterations_);
  capture_iterations_ = std::clamp(capture_iterations_, 1, 100);
  ImGui::PopItemWidth();
  ImGui::SameLine();
  if (ImGui::Button("Record the next iterations")) link.record_next(capture_iterations_);
  ImGui::EndDisabled();
  if (!s.can_capture)
    hint_text("Recording later iterations keeps them in the run folder: start the window with --out DIR.");
  else if (!s.capture.empty() && s.capture.starts_with("refused"))
    error_text(s.capture);
  else if (!s.capture.empty())
    hint_text(s.capture);
}

void ControlsView::draw_recorded(const SessionStatus& s) {
  const RunSettings& r = s.settings;
  ImGui::TextColored({0.9f, 0.85f, 0.4f, 1}, "Recorded run: read only");
  ImGui::TextWrapped("%lld of %lld iterations trained (%lld epoch%s), batch %lld, lr %g (%s), seed %llu, on %s. "
                     "The views show its traced iterations; below, the settings it was trained with. To try "
                     "others, train it again.",
                     static_cast<long long>(s.iteration), static_cast<long long>(s.total_iterations),
                     static_cast<long long>(s.epochs), s.epochs == 1 ? "" : "s",
                     static_cast<long long>(r.batch_size), static_cast<double>(r.lr), to_string(r.lr_schedule),
                     static_cast<unsigned long long>(r.seed), s.device.empty() ? to_string(r.device) : s.device.c_str());
  if (!s.error.empty()) error_text(s.error);  // it diverged
}

void ControlsView::draw_snapshot(const SessionStatus& s, SessionLink& link) {
  ImGui::TextColored({0.9f, 0.85f, 0.4f, 1}, "PyTorch memory snapshot");
  ImGui::TextWrapped("%s, %s. Its allocations as PyTorch recorded them, placed again by the heuristic below: "
                     "one step per event, each block named by its innermost user frame (its whole stack on "
                     "hover in the address map).",
                     s.dataset_name.c_str(), s.device.c_str());
  ImGui::Separator();
  const std::string& now = s.settings.memory.heuristic;
  if (sent_at_ && s.requests > *sent_at_ && !s.replanning) sent_at_.reset();
  ImGui::PushItemWidth(item_width({"heuristic"}));
  ImGui::BeginDisabled(sent_at_.has_value());
  if (ImGui::BeginCombo("heuristic", now.c_str())) {
    for (const std::string& h : allocator_names())
      if (ImGui::Selectable(h.c_str(), h == now) && h != now) {
        MemorySettings m = s.settings.memory;
        m.heuristic = h;
        sent_at_ = s.requests;
        link.request(m);
      }
    ImGui::EndCombo();
  }
  ImGui::EndDisabled();
  ImGui::PopItemWidth();
  if (sent_at_ || s.replanning) {
    ImGui::TextColored({0.9f, 0.85f, 0.4f, 1}, "placing the trace again...");
  } else if (s.requests > 0) {
    if (s.refused) error_text(s.message);
    else ImGui::TextColored({0.5f, 0.9f, 0.5f, 1}, "%s", s.message.c_str());
  }
  hint_text(std::string(fact_info(MemoryFact::peak_load).label) + ": " + fact_text(s.memory, MemoryFact::peak_load) +
            ", footprint " + fact_text(s.memory, MemoryFact::footprint));
}

bool ControlsView::draw_settings(const SessionStatus& s) {
  bool changed = false;
  ImGui::PushItemWidth(item_width({"memory mode", "swap score", "conv algorithm", "allocation order", "host memory",
                                   "copy engine", "prefetch lookahead", "budget", "link GB/s"}));
  changed |= enum_combo("memory mode", edit_.mode);
  if (edit_.mode == OffloadMode::autoswap) changed |= enum_combo("swap score", edit_.swap_score);
  changed |= enum_combo("conv algorithm", edit_.scheme);
  changed |= enum_combo("precision", edit_.precision);
  if (ImGui::BeginCombo("heuristic", edit_.heuristic.c_str())) {
    for (const std::string& h : allocator_names())
      if (ImGui::Selectable(h.c_str(), h == edit_.heuristic)) {
        changed |= h != edit_.heuristic;
        edit_.heuristic = h;
      }
    ImGui::EndCombo();
  }
  changed |= enum_combo("allocation order", edit_.order);
  changed |= enum_combo("transfers", edit_.transfer);
  // A run keeps the host memory it started with (the session refuses a
  // change with the reason); the copy engine changes at the next iteration.
  changed |= enum_combo("host memory", edit_.host_memory);
  changed |= enum_combo("copy engine", edit_.copy_engine);
  if (ImGui::SliderInt("prefetch lookahead", &edit_.lookahead, 0, 4)) changed = true;
  // Turning compression off needs the pinned memory a run started with it
  // did not reserve: the session refuses that with the figures.
  if (ImGui::Checkbox("compress offloads on the host", &edit_.compress)) changed = true;

  // The budget: automatic (what the settings need) or a pool size up to the
  // arena reserved at start.
  if (ImGui::Checkbox("budget: what the settings need", &automatic_budget_)) {
    changed = true;
    edit_.budget_bytes = automatic_budget_ ? 0 : std::max(s.memory.pool_bytes, std::size_t{1} << 20);
  }
  const float mib_scale = 1024.0f * 1024.0f;
  if (!automatic_budget_) {
    float budget = static_cast<float>(edit_.budget_bytes) / mib_scale;
    const float most = std::max(static_cast<float>(s.memory.arena_bytes) / mib_scale, 1.0f);
    if (ImGui::SliderFloat("budget", &budget, 1.0f, most, "%.1f MiB")) {
      edit_.budget_bytes = static_cast<std::size_t>(budget * mib_scale);
      changed = true;
    }
    // Where the smallest workable budget of the current settings sits on
    // the slider.
    const ImVec2 lo = ImGui::GetItemRectMin(), hi = ImGui::GetItemRectMax();
    const float frac = std::clamp((static_cast<float>(s.memory.minimum_pool_bytes) / mib_scale - 1.0f) / std::max(most - 1.0f, 1.0f), 0.0f, 1.0f);
    const float x = lo.x + frac * (hi.x - lo.x);
    ImGui::GetWindowDrawList()->AddLine({x, lo.y}, {x, hi.y}, IM_COL32(255, 80, 80, 255), 2.0f);
    if (ImGui::SmallButton(fact_info(MemoryFact::minimum_pool).label)) {
      edit_.budget_bytes = s.memory.minimum_pool_bytes;
      changed = true;
    }
  }
  hint_text(std::string(fact_info(MemoryFact::minimum_pool).label) + " now: " +
            fact_text(s.memory, MemoryFact::minimum_pool) + " (red mark)");
  if (edit_.mode == OffloadMode::autoswap && automatic_budget_)
    ImGui::TextWrapped("autoswap offloads as little as fits the budget: without one it offloads nothing");
  if (edit_.mode == OffloadMode::hybrid && automatic_budget_)
    ImGui::TextWrapped("hybrid offloads and recomputes only what the budget needs: without one it keeps everything");
  if (s.link_adjustable) {
    float gbps = static_cast<float>(edit_.link_gbps);
    if (ImGui::SliderFloat("link GB/s", &gbps, 0.0f, 32.0f, gbps == 0 ? "unthrottled" : "%.1f GB/s")) {
      edit_.link_gbps = gbps;
      changed = true;
    }
  }
  ImGui::PopItemWidth();
  return changed;
}

}  // namespace tidepool::ui
