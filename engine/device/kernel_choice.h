// How a device that chooses kernels by timing them (the cuda device's `p`
// convolutions) makes its choices repeatable (Device::kernel_choices).
//
// Timing is noisy: the same search in another process can name another
// algorithm, and another algorithm computes other last bits. So a choice
// is made by a rule that the noise moves as little as possible
// (pick_timed), and every choice is written down as a line
// "<shape> -> <choice>" that another process adopts instead of timing
// again (KernelChoiceRecord): rank 0's lines go to every rank, a
// checkpoint's to the resumed run, the machine's earlier ones to a new run
// (app/kernel_choices_file.h).
//
// CUDA-free on purpose: the rules are the device's, the timings are not,
// so a test can feed them a fake table of timings
// (tests/testing/timing_device.h) on a machine without a GPU.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace tidepool {

// How close to the fastest a measured kernel must be to count as tied with
// it. Timings of one algorithm differ by several percent from search to
// search (clocks, the L2's state), so "the fastest" alone can name another
// algorithm in every process; among the ties the lowest algorithm number
// wins, which does not move with the noise. 10 %: the spread seen between
// repeated cudnnFind* searches of small shapes on an H100, while a real gap
// between algorithms is usually far wider.
inline constexpr float kTimingTie = 1.10f;
// Searches per shape; each algorithm keeps its best time (the least
// disturbed one: keep_best_time).
inline constexpr int kTimingSearches = 3;

// `timed` holds each candidate once with its best time so far; `t` is a
// new measurement of one. Timed has `algo`, `math` and `time_ms`.
template <class Timed>
void keep_best_time(std::vector<Timed>& timed, const Timed& t) {
  auto seen = std::find_if(timed.begin(), timed.end(),
                           [&](const Timed& o) { return o.algo == t.algo && o.math == t.math; });
  if (seen == timed.end())
    timed.push_back(t);
  else
    seen->time_ms = std::min(seen->time_ms, t.time_ms);
}

// Sorts `timed` fastest first (ties keep their order) and returns the
// index of the pick: the lowest (algo, math) among those within
// kTimingTie of the fastest. `timed` must not be empty.
template <class Timed>
std::size_t pick_timed(std::vector<Timed>& timed) {
  std::stable_sort(timed.begin(), timed.end(), [](const Timed& a, const Timed& b) { return a.time_ms < b.time_ms; });
  const float tie = timed.front().time_ms * kTimingTie;
  std::size_t pick = 0;
  for (std::size_t i = 1; i < timed.size(); ++i) {
    const Timed& o = timed[i];
    if (o.time_ms <= tie &&
        (o.algo < timed[pick].algo || (o.algo == timed[pick].algo && o.math < timed[pick].math)))
      pick = i;
  }
  return pick;
}

// "<shape> -> <choice>": one recorded choice.
std::string kernel_choice_line(const std::string& shape, const std::string& choice);

// Choices made elsewhere, by shape. Not thread-safe: its owner locks.
class KernelChoiceRecord {
 public:
  // Each line is a kernel_choice_line; a later line for a shape replaces
  // an earlier one, so adopting the machine's record and then a
  // checkpoint's lets the checkpoint win. Throws std::invalid_argument,
  // quoting it, for a line without " -> ".
  void adopt(const std::vector<std::string>& lines);
  // The choice adopted for `shape`, or "".
  std::string adopted(const std::string& shape) const;

 private:
  std::map<std::string, std::string> by_shape_;
};

}  // namespace tidepool
