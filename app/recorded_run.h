// A finished `--batch` run seen by the window through ui::SessionLink, read
// only (`tidepool view RUN_DIR`): the events of its traced iterations come
// from events.bin, replayed once into a RingSink large enough for all of
// them, and its status from summary.json (the settings it was trained
// with, the MemoryPlan's figures, how far it got). A data-parallel run's
// other ranks' events come from their events.rankN.bin, where the folder
// has them (ranks on other machines wrote theirs there). Nothing can be changed:
// requests, pause, step and restart do nothing, and the views, seeing
// read_only(), offer none of them.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/observe/event_file.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/session_link.h"

namespace tidepool::app {

// What RecordedRun reads first, for every reader of a finished run folder
// (`view`, `export`, `replay RUN_DIR`): the folder's summary.json as a
// status. Throws std::runtime_error "<folder> is not a Tidepool run folder:
// <why>" when it is missing, is a file, or has no events.bin or no
// summary.json, and names summary.json when that cannot be read.
ui::SessionStatus read_run_status(const std::filesystem::path& folder);
// The same checks (events.bin only `with_events`), and summary.json as it
// is, for what reads figures only (`tidepool diff`).
nlohmann::json read_run_summary(const std::filesystem::path& folder, bool with_events);

// A run's events file (events.bin, or a rank's events.rankN.bin), read and
// checked (engine/observe/event_file.h). Throws std::runtime_error when it
// is refused, and when it holds no traced iteration (a run trained with
// --trace-iterations 0), which leaves nothing to show or replay.
EventFile traced_events(const std::filesystem::path& events);

class RecordedRun final : public ui::SessionLink {
 public:
  // Opens a run folder. Throws std::runtime_error with a message for the
  // user when `folder` is not a finished run folder (missing, no events.bin,
  // no summary.json), when summary.json cannot be read, when events.bin is
  // refused (truncated, corrupt, a newer format: engine/observe/event_file.h)
  // or when it holds no traced iteration to show.
  explicit RecordedRun(const std::filesystem::path& folder);

  // What summary.json says about a run: its settings (the "settings"
  // object; the top-level keys for what a summary without one has), the
  // memory figures, iterations trained of those planned, the final test
  // accuracy; state recorded. Throws nlohmann::json::exception when a key
  // it needs is missing or holds something else.
  static ui::SessionStatus status_from_summary(const nlohmann::json& summary);

  const std::filesystem::path& folder() const { return folder_; }

  // ui::SessionLink
  ui::SessionStatus status() const override { return status_; }
  std::vector<int> event_ranks() const override;
  RingSnapshot events(int rank) const override;
  std::uint64_t events_version(int rank) const override;
  bool read_only() const override { return true; }
  // A recorded run was trained already: there is nothing to change.
  void request(const MemorySettings&) override {}
  void pause() override {}
  void resume() override {}
  void step() override {}
  void restart(const RunSettings&) override {}

 private:
  std::filesystem::path folder_;
  ui::SessionStatus status_;
  struct RankEvents {
    int rank = 0;
    std::unique_ptr<RingSink> ring;  // sized by the file's counts, filled once
  };
  std::vector<RankEvents> ranks_;  // rank 0's first
  const RingSink* ring(int rank) const;
};

}  // namespace tidepool::app
