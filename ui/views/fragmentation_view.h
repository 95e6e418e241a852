// Teaching scenario: the papers' allocation sequences (docs/references.md) played step by
// step through every heuristic side by side, so a student sees the moment a
// placement splits the free space and a later request no longer fits.
#pragma once

#include <chrono>
#include <optional>

#include "ui/scene/fragmentation.h"
#include "ui/views/view.h"

namespace tidepool::ui {

class FragmentationView {
 public:
  FragmentationView();
  // Draws into the current ImGui window.
  void draw();
  // Shows the pools after the sequence's first `events` events (all of
  // them when it has fewer), paused: what `--scenario-step N` opens on.
  void play_to(int events);

 private:
  void select(int sequence);

  std::vector<PaperSequence> sequences_;
  int selected_ = -1;
  std::optional<FragmentationReplay> replay_;
  int event_ = 0;  // frames shown: the pools after events [0, event_)
  bool playing_ = false;
  std::chrono::steady_clock::time_point last_advance_{};
};

}  // namespace tidepool::ui
