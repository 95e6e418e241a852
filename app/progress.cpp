#include "app/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace tidepool::app {

Progress::Progress(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::update(std::int64_t epoch, std::int64_t epochs, std::int64_t done, std::int64_t total,
                      float loss, double images_per_second, double eta_seconds) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done != total &&
      now - last_print_ < (tty_ ? std::chrono::milliseconds(100) : std::chrono::seconds(5)))
    return;
  last_print_ = now;
  const double fraction = total ? static_cast<double>(done) / total : 1.0;
  constexpr int kWidth = 24;
  std::string bar(kWidth, '.');
  for (int i = 0; i < static_cast<int>(fraction * kWidth); ++i) bar[i] = '#';
  char eta[32] = "--:--";
  if (eta_seconds >= 0) {
    const long s = static_cast<long>(eta_seconds + 0.5);
    std::snprintf(eta, sizeof eta, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  }
  // A NaN loss is a device that computes no numbers (sim): said in words.
  char loss_text[40] = "no numbers (simulated)";
  if (!std::isnan(loss)) std::snprintf(loss_text, sizeof loss_text, "loss %.4f", static_cast<double>(loss));
  std::fprintf(stderr, "%sepoch %lld/%lld [%s] %lld/%lld  %s  %.0f img/s  ETA %s%s",
               tty_ ? "\r" : "", static_cast<long long>(epoch + 1), static_cast<long long>(epochs),
               bar.c_str(), static_cast<long long>(done), static_cast<long long>(total), loss_text,
               images_per_second, eta, tty_ ? "\x1b[K" : "\n");
  open_ = tty_;
  std::fflush(stderr);
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  std::fprintf(stderr, "%s%s\n", open_ ? "\n" : "", text.c_str());
  open_ = false;
}

}  // namespace tidepool::app
