#include "engine/run/host_thread_pool.h"

#include <algorithm>

namespace tidepool {

struct HostThreadPool::Batch {
  const std::function<void(std::size_t)>* fn;
  std::size_t remaining;    // parts not finished yet (under the pool's mutex)
  std::exception_ptr error;  // the first one (under the pool's mutex)
};

HostThreadPool::HostThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i) workers_.emplace_back([this] { work(); });
}

HostThreadPool::~HostThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& w : workers_) w.join();
}

void HostThreadPool::execute(const Task& task) {
  std::exception_ptr error;
  try {
    (*task.batch->fn)(task.part);
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard lock(mutex_);
  if (error && !task.batch->error) task.batch->error = error;
  if (--task.batch->remaining == 0) done_.notify_all();
}

void HostThreadPool::work() {
  std::unique_lock lock(mutex_);
  for (;;) {
    queued_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left to do
    const Task task = tasks_.front();
    tasks_.pop_front();
    lock.unlock();
    execute(task);
    lock.lock();
  }
}

void HostThreadPool::run(std::size_t parts, const std::function<void(std::size_t)>& fn) {
  if (parts == 0) return;
  Batch batch{&fn, parts, nullptr};
  if (parts > 1) {
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 1; i < parts; ++i) tasks_.push_back({&batch, i});
    }
    queued_.notify_all();
  }
  execute({&batch, 0});
  std::unique_lock lock(mutex_);
  while (batch.remaining > 0) {
    if (!tasks_.empty()) {  // help rather than wait: ours, or another caller's
      const Task task = tasks_.front();
      tasks_.pop_front();
      lock.unlock();
      execute(task);
      lock.lock();
      continue;
    }
    done_.wait(lock);
  }
  if (batch.error) std::rethrow_exception(batch.error);
}

}  // namespace tidepool
