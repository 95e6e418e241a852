// A few host threads that split one piece of host work between them: the
// compression of an offloaded tensor (engine/run/zero_value_store.h), which
// vDNN++ spreads over the cores vDNN leaves idle. The caller is one of the
// threads: it runs part 0 itself, and while it waits for the rest it runs
// whatever parts are queued, its own or another caller's, so two streams
// sharing the pool never wait on each other's idle workers.
//
//   HostThreadPool pool(4);                                 // 3 workers + the caller
//   pool.run(parts, [&](std::size_t i) { compress(part[i]); });
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tidepool {

class HostThreadPool {
 public:
  // `threads` counts the caller: 1 runs everything on the calling thread.
  explicit HostThreadPool(int threads);
  ~HostThreadPool();
  HostThreadPool(const HostThreadPool&) = delete;
  HostThreadPool& operator=(const HostThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(0), ..., fn(parts - 1) and returns when all have; rethrows the
  // first exception one of them threw. May be called from several threads
  // at once.
  void run(std::size_t parts, const std::function<void(std::size_t)>& fn);

 private:
  struct Batch;
  struct Task {
    Batch* batch;
    std::size_t part;
  };
  void execute(const Task& task);
  void work();

  std::mutex mutex_;
  std::condition_variable queued_;  // workers: a task or the end
  std::condition_variable done_;    // callers: a part of some batch finished
  std::deque<Task> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace tidepool
