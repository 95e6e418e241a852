#include "engine/run/copy_threads.h"

#include <stdexcept>
#include <utility>

namespace tidepool {

namespace {
std::size_t lane_of(Stream direction) {
  if (direction == Stream::offload) return 0;
  if (direction == Stream::prefetch) return 1;
  throw std::invalid_argument("copy threads copy offloads and prefetches, not the compute stream's copies");
}
}  // namespace

CopyThreads::CopyThreads(Device& device) : device_(device) {
  for (std::size_t lane = 0; lane < 2; ++lane) threads_[lane] = std::thread([this, lane] { run(lane); });
}

CopyThreads::~CopyThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::shared_ptr<const CopyThreads::Copy> CopyThreads::issue(Stream direction,
                                                            std::vector<std::shared_ptr<DeviceEvent>> after,
                                                            void* dst, const void* src, std::size_t bytes,
                                                            std::shared_ptr<const Copy> after_copy) {
  const std::size_t lane = lane_of(direction);
  auto copy = std::make_shared<Copy>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queues_[lane].push_back({copy, std::move(after), std::move(after_copy), dst, src, bytes});
    ++unfinished_;
  }
  work_cv_.notify_all();
  return copy;
}

void CopyThreads::wait(const Copy& copy) {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return copy.done; });
  if (copy.error) {
    if (unreported_ == copy.error) unreported_ = nullptr;
    std::rethrow_exception(copy.error);
  }
}

void CopyThreads::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return unfinished_ == 0; });
  if (unreported_) std::rethrow_exception(std::exchange(unreported_, nullptr));
}

void CopyThreads::run(std::size_t lane) {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return stopping_ || !queues_[lane].empty(); });
      if (queues_[lane].empty()) return;  // stopping, and nothing left to copy
      job = std::move(queues_[lane].front());
      queues_[lane].pop_front();
    }
    std::exception_ptr error;
    if (job.after_copy) {  // the other thread's copy; its failure is reported there
      std::unique_lock<std::mutex> lock(mutex_);
      done_cv_.wait(lock, [&] { return job.after_copy->done; });
      if (job.after_copy->error) error = job.after_copy->error;
    }
    if (!error) {
      try {
        // The host waits for the data, as the paper's threads did
        // (cudaEventSynchronize), then copies synchronously.
        for (const auto& e : job.after) device_.synchronize(*e);
        job.copy->start_us = device_.now_us();
        device_.copy_sync(job.dst, job.src, job.bytes);
        job.copy->end_us = device_.now_us();
      } catch (...) {
        error = std::current_exception();
      }
    }
    job.after.clear();  // the events go back before the executor may reuse them
    job.after_copy.reset();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job.copy->error = error;
      job.copy->done = true;
      if (error && !unreported_) unreported_ = error;
      --unfinished_;
    }
    done_cv_.notify_all();
  }
}

}  // namespace tidepool
