// A one-line progress bar on stderr: epoch, batches, loss, images/s, ETA.
// On a terminal it redraws in place; in a log (CI, nohup) it prints a line
// every few seconds instead of flooding the file with carriage returns.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tidepool::app {

class Progress {
 public:
  explicit Progress(bool enabled);
  // `done` of `total` iterations of the run, within `epoch`; eta_seconds < 0: unknown.
  // `loss` NaN: the device computes no numbers (sim), which the line says.
  void update(std::int64_t epoch, std::int64_t epochs, std::int64_t done, std::int64_t total,
              float loss, double images_per_second, double eta_seconds);
  // Ends the current line with a message (the epoch's evaluation, say).
  void line(const std::string& text);

 private:
  bool enabled_;
  bool tty_;
  bool open_ = false;  // a bar is drawn without a newline
  std::chrono::steady_clock::time_point last_print_{};
};

}  // namespace tidepool::app
