// A training session on its own thread, seen by the window through
// ui::SessionLink: the thread trains iteration after iteration, applies the
// UI's newest settings request at each boundary (this is the one mailbox
// between the window and training), and pauses, steps or starts over when
// told. The UI thread only reads snapshots (the ring of events, a copy of
// the status) and writes requests, so a slow frame never stalls training
// and a slow iteration never stalls a frame.
//
// On a data-parallel run (mpirun) this is rank 0's runner: it sends every
// other rank the turn it takes (app/window_ranks.h), and receives their
// events for the window's Rank menu.
//
// With a run record (`tidepool --out DIR` without --batch, record_to())
// the session the runner starts with writes its run folder as --batch
// does, through the same writer (app/run_record.h): the traced iterations'
// files, a metrics row and a checkpoint at every epoch's end, checkpoints
// as --checkpoint-every says, and when its training ends (its planned
// end, --stop-after, a divergence, the window closing or a teaching
// scenario starting over) a checkpoint and summary.json. Only the training
// thread touches the record; the UI thread still only reads snapshots and
// writes requests. Such a session can also record later iterations on
// request (record_next: app/capture_recorder.h).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "app/checkpoint.h"
#include "app/run_record.h"
#include "app/session.h"
#include "engine/comm/communicator.h"
#include "engine/observe/rank_events.h"
#include "engine/observe/sinks/ring_sink.h"
#include "engine/run/run_settings.h"
#include "app/window_ranks.h"
#include "ui/session_link.h"

namespace tidepool::app {

// What the window keeps of the events: enough for the last few iterations
// of a deep network, small enough to copy every few frames.
inline constexpr RingCapacities kWindowRing{.spans = 1 << 14, .allocs = 1 << 15, .loads = 1 << 15,
                                            .iterations = 1 << 13};

class SessionRunner final : public ui::SessionLink {
 public:
  // `comm`: the ranks of a data-parallel run, this being rank 0 (not
  // owned); null on one process.
  explicit SessionRunner(RunSettings settings, RingCapacities ring = kWindowRing, Communicator* comm = nullptr);
  // Stops training at the next iteration boundary and joins the thread.
  ~SessionRunner() override;
  SessionRunner(const SessionRunner&) = delete;
  SessionRunner& operator=(const SessionRunner&) = delete;

  // The first session writes its run folder through `record`, whose checks
  // have passed (RunRecord's constructor), continuing `resume` where given
  // (--resume: its settings are the runner's). Before start(); one process
  // only (a data-parallel window keeps no run folder).
  void record_to(std::unique_ptr<RunRecord> record, std::optional<Checkpoint> resume = std::nullopt);

  // Starts the thread: sets the session up (a failure becomes state
  // `failed` with its message) and trains until the planned end or until
  // it diverges (state `diverged`, the session's message in `error`), then
  // waits, keeping the last events on show, for a restart or the end.
  void start(bool paused = false);
  // Stops training, and on a data-parallel run tells the other ranks to
  // stop and waits (a few seconds at most) for their last events. False
  // when some rank did not answer: it is stuck or gone, and the caller
  // must end the job rather than wait on it (Communicator::abort).
  bool stop();

  // ui::SessionLink
  ui::SessionStatus status() const override;
  std::vector<int> event_ranks() const override;
  RingSnapshot events(int rank) const override;
  std::uint64_t events_version(int rank) const override;
  void request(const MemorySettings& settings) override;
  void pause() override;
  void resume() override;
  void step() override;
  void restart(const RunSettings& settings) override;
  void record_next(std::int64_t iterations) override;

  // Blocks until `iterations` iterations have been trained since start or
  // the run ended, failed or diverged. For the tests: with no time limit,
  // since they decide on what the run did, never on how long it took (a
  // run that hangs is failed by ctest's timeout).
  void wait_for_iterations(std::int64_t iterations) const;

 private:
  void run();
  // Waits until training may go on, applying a request that came in
  // meanwhile; false when the session must end (stop or restart).
  bool wait_for_turn(TrainingSession& session);
  void publish(const ui::SessionStatus& s, ui::RunState state, const std::string& error = {});
  // Trains `session` until its end, a stop or a restart; with `record`,
  // writing its run folder.
  void train(TrainingSession& session, RunRecord* record);
  // The training thread's side of record_next, at a boundary or while paused.
  void begin_capture(TrainingSession& session, std::int64_t iterations);
  // A capture the record finished: said in the status and on stdout.
  void announce_capture(RunRecord& record);

  // Sends the other ranks `turn` (nothing on one process).
  void tell_ranks(Turn::Kind kind, const RunSettings& settings) const;

  RunSettings settings_;
  RingSink ring_;
  Communicator* comm_ = nullptr;
  std::unique_ptr<RankEvents> rank_events_;  // the other ranks' events, on a data-parallel run
  std::thread thread_;
  // The first session's run folder (record_to), the training thread's once it runs.
  std::unique_ptr<RunRecord> record_;
  bool saving_ = false;  // the session now is saved (the training thread's alone)
  // The record the session now writes, and whether its folder is open
  // (the training thread's alone).
  RunRecord* recording_ = nullptr;
  bool record_opened_ = false;
  std::optional<Checkpoint> resume_;

  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool stop_ = false;
  bool paused_ = false;
  int steps_ = 0;  // iterations to train while paused
  std::optional<MemorySettings> pending_;  // the mailbox: the newest request not yet applied
  std::optional<RunSettings> restart_;
  std::optional<std::int64_t> capture_asked_;  // record_next's, not yet begun
  ui::SessionStatus status_;  // the session's, with the state and the requests' outcome
  std::int64_t trained_ = 0;  // iterations trained by this runner, every session
};

}  // namespace tidepool::app
