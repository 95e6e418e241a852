// The settings a student changes while training runs: offload mode, conv
// algorithm scheme, heuristic, allocation order, transfer semantics, the
// budget and the simulated link. Edits stay local until Apply sends one
// request; the session applies it at the next iteration boundary or refuses
// it with the reason, shown here. Pause, step and resume control training,
// and a saved session records the next iterations on request.
// On a recorded run (SessionLink::read_only) it shows the settings the run
// was trained with, every input disabled, and no run control. On a
// snapshot (RunState::snapshot) it offers the heuristic only: choosing one
// re-places the trace at once.
#pragma once

#include <cstdint>
#include <optional>

#include "ui/views/view.h"

namespace tidepool::ui {

class ControlsView {
 public:
  void draw(const Frame& frame);

 private:
  // What a recorded run was trained with, above its settings.
  void draw_recorded(const SessionStatus& s);
  // A snapshot's trace: where it comes from and the heuristic that places it.
  void draw_snapshot(const SessionStatus& s, SessionLink& link);
  // "Record the next K iterations" and what became of the last request.
  void draw_capture(const SessionStatus& s, SessionLink& link);
  // The settings' inputs, editing edit_; true when one changed.
  bool draw_settings(const SessionStatus& s);

  MemorySettings edit_;
  bool editing_ = false;  // edit_ differs from what the session reported
  bool automatic_budget_ = true;
  // After Apply: the session's request count then, until it moves on (the
  // request was handled), the edits stay on show.
  std::optional<std::uint64_t> sent_at_;
  int capture_iterations_ = 2;  // the same two a run's pictures show (kRunPictureIterations)
};

}  // namespace tidepool::ui
