#include "ui/scene/generation.h"

#include <atomic>

namespace tidepool::ui {

std::uint64_t next_scene_generation() {
  // Scenes are built on the window's thread and on tests' threads alike.
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace tidepool::ui
