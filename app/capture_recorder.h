// The window's "record the next K iterations": a saved session's later
// iterations, recorded into the run folder beside its first traced ones
// (which --trace-from and --trace-iterations chose when it started), as
//
//   RUN/captures/<first>-<last>/   (iterations counted from 1, as the user reads them)
//     trace.json, memory_load.csv, events.bin, the three pictures   (app/traced_files.h)
//     summary.json                 the run's figures when the capture ended, with a "capture" object
//
// so that every command that reads a run folder (`view`, `replay`,
// `export`, `diff`) takes a capture as it is. A capture begins with the
// blocks placed for the run that are live then (the newest set-up
// placement: the parameters, and after a re-plan their new places), so its
// address map is the whole pool's. Nothing is overwritten: a capture whose
// folder exists is refused.
//
// Only the training thread calls it (RunRecord's rule), and the events
// come on that thread too.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/traced_files.h"
#include "engine/observe/events.h"

namespace tidepool::app {

// "captures/<first>-<last>" for iterations [from, from + count) by the
// events' numbers (from 0).
std::filesystem::path capture_folder(const std::filesystem::path& run, std::int64_t from, std::int64_t count);

class CaptureRecorder final : public EventSink {
 public:
  explicit CaptureRecorder(std::filesystem::path run) : run_(std::move(run)) {}

  // Records iterations [from, from + count) from here on; returns their
  // folder, created now. Throws std::invalid_argument (the reason for the
  // user) while another capture is recording, for a count below 1, and
  // when the folder exists.
  std::filesystem::path start(std::int64_t from, std::int64_t count);
  bool recording() const { return files_ != nullptr; }
  // The iteration after the capture's last, by the events' numbers.
  std::int64_t end() const { return window_.end(); }
  // The capture is done (its last iteration, or the run's, trained): its
  // files closed, the pictures drawn and summary.json written, `summary`
  // with a "capture" object added. Returns its folder; nothing when none
  // is recording.
  std::optional<std::filesystem::path> finish(const MemorySummary& memory, std::int64_t batch, bool computes_values,
                                              nlohmann::json summary);

  // EventSink: the newest set-up placement is kept (a capture starts with
  // it), and while recording every event goes on to the capture's files.
  void on_span(const SpanEvent& e) override { pass(e); }
  void on_alloc(const AllocEvent& e) override { pass(e); }
  void on_load(const LoadSample& e) override { pass(e); }
  void on_iteration(const IterationSummary& e) override { pass(e); }

 private:
  template <class E>
  void pass(const E& e) {
    if (e.iteration < 0) {
      if (!in_set_up_) set_up_.clear();  // a new pool: its placement replaces the old one
      in_set_up_ = true;
      set_up_.add(e);
    } else {
      in_set_up_ = false;
    }
    if (files_) send(files_->sink(), e);
  }
  static void send(EventSink& t, const SpanEvent& e) { t.on_span(e); }
  static void send(EventSink& t, const AllocEvent& e) { t.on_alloc(e); }
  static void send(EventSink& t, const LoadSample& e) { t.on_load(e); }
  static void send(EventSink& t, const IterationSummary& e) { t.on_iteration(e); }

  std::filesystem::path run_;
  KeptEvents set_up_;
  bool in_set_up_ = false;
  TraceWindow window_;
  std::filesystem::path folder_;
  std::unique_ptr<TracedFiles> files_;
};

}  // namespace tidepool::app
