// A PyTorch memory snapshot seen by the window through ui::SessionLink
// (`tidepool view snap.pickle`): one device of it as an allocation trace
// (engine/memory/snapshot/snapshot_trace.h), placed by a heuristic through
// the one replay loop (engine/memory/replay.h) into a RingSink, as a run's
// device pool reports its placements (engine/run/executor.cpp): each block
// placed, freed, parked or given back becomes an AllocEvent and a
// LoadSample, and the whole trace one iteration (0) whose IterationSummary
// carries the loop's figures. Every view reads those events unchanged.
//
//   SnapshotRun run("snap.pickle");          // read and placed by pytorch
//   run.request(settings_with_heuristic);    // re-placed by another, on a worker thread
//   run.wait_idle();
//   run.events(0);                            // the new placement; events_version(0) moved on
//
// A trace event is one step of that iteration; a block's name is its
// label (the innermost user frame) and block_stack(id) its whole stack.
// Only the heuristic can change: pause, step and restart do nothing, and a
// request re-places the same trace with its heuristic (the rest of the
// settings belong to a training run and are ignored). Re-placing runs on
// the link's own thread so the window keeps drawing; status().replanning
// says one is under way. The views read events() from the window's thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "engine/memory/snapshot/snapshot_trace.h"
#include "engine/observe/sinks/ring_sink.h"
#include "ui/session_link.h"

namespace tidepool::app {

// The heuristic a snapshot is placed by until the window asks for another:
// PyTorch's own allocator, which made the trace.
inline constexpr const char* kSnapshotHeuristic = "pytorch";

class SnapshotRun final : public ui::SessionLink {
 public:
  // Reads `file` (a pickle or its JSON; engine/memory/snapshot/
  // snapshot_file.h) and places device `device` of it (nothing: the
  // busiest). Throws std::invalid_argument with a message for the user
  // when the file cannot be read, is no PyTorch snapshot, or its device
  // does not exist, and for an unknown heuristic.
  explicit SnapshotRun(const std::filesystem::path& file, std::optional<int> device = std::nullopt,
                       const std::string& heuristic = kSnapshotHeuristic);
  // A trace already read; `source` names it in the title and messages.
  SnapshotRun(SnapshotTrace trace, std::string source, const std::string& heuristic = kSnapshotHeuristic);
  ~SnapshotRun() override;
  SnapshotRun(const SnapshotRun&) = delete;
  SnapshotRun& operator=(const SnapshotRun&) = delete;

  const SnapshotTrace& trace() const { return trace_; }
  const std::string& source() const { return source_; }
  // Returns once no request is waiting or being placed.
  void wait_idle();

  // ui::SessionLink
  ui::SessionStatus status() const override;
  RingSnapshot events(int rank) const override;
  std::uint64_t events_version(int rank) const override;
  std::string block_stack(std::int64_t block) const override;
  void request(const MemorySettings& settings) override;
  // A snapshot was recorded already: there is no training to control.
  void pause() override {}
  void resume() override {}
  void step() override {}
  void restart(const RunSettings&) override {}

 private:
  struct Placement {
    std::unique_ptr<RingSink> ring;
    ui::SessionStatus status;  // the figures and the heuristic of this placement
  };
  Placement place(const std::string& heuristic) const;
  void work();

  const SnapshotTrace trace_;
  const std::string source_;
  std::unordered_map<std::int64_t, int> stack_of_block_;  // block id -> index into trace_.stacks (-1: none)

  mutable std::mutex mutex_;  // guards everything below but version_
  std::condition_variable wake_, idle_;
  Placement placed_;
  std::optional<std::string> pending_;  // the heuristic asked for and not placed yet
  bool placing_ = false, stop_ = false;
  std::uint64_t requests_ = 0;
  bool refused_ = false;
  std::string message_;
  std::atomic<std::uint64_t> version_{1};
  std::thread worker_;  // last: started once everything above is built
};

}  // namespace tidepool::app
