// Zhuang et al.'s "CPU multithreading" copies (§4.2, Fig. 5b;
// CopyEngine::threads): a host thread per direction takes the executor's
// offloads (or prefetches) in order, waits on the host for the events that
// produced their data, then copies synchronously on the device's default
// stream (Device::copy_sync: cudaMemcpy's ordering, in line with the
// compute stream) and says it is done. The executor waits for a copy on
// the host before anything may use what it copied (Executor::wait_copy):
// a copy is a host thread's work, not a point in a stream that another
// stream could wait for.
//
// What the paper measured follows: a copy runs between compute kernels,
// never beside them (1.17–1.46× the iteration time against 1.0–1.21× with
// streams, its Table 3), and the executor cannot queue past a layer whose
// data a copy thread still owes, so the compute stream drains while it
// waits. On the cpu device both engines copy on host threads; what differs
// is exactly this ordering: with streams the copy runs on the transfer
// stream's worker beside compute, with threads on the compute stream's
// worker between kernels, issued from a thread that had to wait for its
// data on the host first.
//
//   CopyThreads copies(device);
//   auto c = copies.issue(Stream::offload, {produced}, host, device_ptr, bytes);
//   auto back = copies.issue(Stream::prefetch, {freed}, device_ptr, host, bytes, c);
//   ...
//   copies.wait(*c);     // before the block is reused or the data is read
//   copies.drain();      // at the end of the iteration; rethrows a failure
//
// Only the executor uses it (it is part of "only the executor touches
// streams"): issue, wait and drain come from the executor's thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/device/device.h"

namespace tidepool {

class CopyThreads {
 public:
  // One copy. Its fields are the copy thread's until wait() has returned
  // for it (or drain()); then the executor reads them.
  struct Copy {
    double start_us = 0, end_us = 0;  // on the device's clock, around copy_sync
    bool done = false;                // guarded by the CopyThreads' mutex
    std::exception_ptr error;
  };

  // Starts one thread for offloads and one for prefetches.
  explicit CopyThreads(Device& device);
  // Lets the threads finish what was issued, then joins them.
  ~CopyThreads();
  CopyThreads(const CopyThreads&) = delete;
  CopyThreads& operator=(const CopyThreads&) = delete;

  // Queues a copy on the thread of `direction` (Stream::offload or
  // Stream::prefetch): after every event of `after` has completed, as the
  // host sees them, and `after_copy` (another thread's copy; null: none)
  // is done, it copies `bytes` from `src` to `dst`. Throws
  // std::invalid_argument for the compute stream.
  std::shared_ptr<const Copy> issue(Stream direction, std::vector<std::shared_ptr<DeviceEvent>> after, void* dst,
                                    const void* src, std::size_t bytes,
                                    std::shared_ptr<const Copy> after_copy = nullptr);
  // Blocks until the copy is done; rethrows what it threw.
  void wait(const Copy& copy);
  // Blocks until every copy issued is done; rethrows the first failure not
  // yet rethrown by wait(), so none is lost.
  void drain();

 private:
  struct Job {
    std::shared_ptr<Copy> copy;
    std::vector<std::shared_ptr<DeviceEvent>> after;
    std::shared_ptr<const Copy> after_copy;
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  void run(std::size_t lane);

  Device& device_;
  std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job> queues_[2];  // offload, prefetch
  std::size_t unfinished_ = 0;
  std::exception_ptr unreported_;  // the first failure wait() has not rethrown
  bool stopping_ = false;
  // Declared last: started after, and joined before, what they use.
  std::thread threads_[2];
};

}  // namespace tidepool
