#include "engine/device/cpu/worker_stream.h"

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <utility>

#if defined(__linux__)
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace tidepool {

namespace {

// Names the worker thread so that debuggers, perf and sanitizer reports say
// which stream a thread belongs to. Linux limits names to 15 characters.
void name_current_thread(const std::string& name) {
#if defined(__linux__)
  const std::string short_name = ("tp-" + name).substr(0, 15);
  pthread_setname_np(pthread_self(), short_name.c_str());
#else
  (void)name;
#endif
}

// Linux keeps niceness per thread, and a thread starts with its creator's:
// `nice` more than that (a process started with `nice` stays below the
// rest, its workers further still), at most 19. Best effort: a refusal
// leaves the thread at its creator's priority.
void lower_priority_of_current_thread(int nice) {
#if defined(__linux__)
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, tid);  // -1 is a niceness too: errno tells a failure
  if (errno != 0) return;
  (void)setpriority(PRIO_PROCESS, tid, std::min(own + nice, 19));
#else
  (void)nice;
#endif
}

}  // namespace

WorkerStream::WorkerStream(std::string name, int nice)
    : name_(std::move(name)), nice_(nice), thread_([this] { run(); }) {}

WorkerStream::~WorkerStream() { shut_down(); }

std::uint64_t WorkerStream::enqueue(std::function<void()> task, TaskKind kind) {
  if (!task) throw std::invalid_argument("WorkerStream '" + name_ + "': empty task");
  std::uint64_t seq = 0;
  {
    std::lock_guard lock(mutex_);
    if (stopping_) {
      throw std::logic_error("WorkerStream '" + name_ + "': enqueue after shut_down");
    }
    queue_.push_back(Task{std::move(task), kind});
    seq = ++enqueued_;
  }
  work_cv_.notify_one();
  return seq;
}

void WorkerStream::wait_for(std::uint64_t seq) {
  std::unique_lock lock(mutex_);
  if (seq > enqueued_) {
    throw std::invalid_argument("WorkerStream '" + name_ + "': waiting for task " +
                                std::to_string(seq) + " but only " + std::to_string(enqueued_) +
                                " were queued");
  }
  done_cv_.wait(lock, [&] { return completed_ >= seq; });
}

bool WorkerStream::reached(std::uint64_t seq) const {
  std::lock_guard lock(mutex_);
  return completed_ >= seq;
}

void WorkerStream::drain() {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = enqueued_;
  done_cv_.wait(lock, [&] { return completed_ >= target; });
}

std::uint64_t WorkerStream::enqueued() const {
  std::lock_guard lock(mutex_);
  return enqueued_;
}

std::uint64_t WorkerStream::completed() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

std::exception_ptr WorkerStream::take_error() {
  std::lock_guard lock(mutex_);
  return std::exchange(error_, nullptr);
}

void WorkerStream::shut_down() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_one();
  // Only the owner calls shut_down (the destructor or the device's), never
  // two threads at once, so checking joinable() here is not a race.
  if (thread_.joinable()) thread_.join();
}

void WorkerStream::run() {
  name_current_thread(name_);
  if (nice_ > 0) lower_priority_of_current_thread(nice_);
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    // A stop request still drains the queue: queued work was promised to
    // whoever queued it, and other streams may be waiting on it.
    if (queue_.empty()) return;
    Task task = std::move(queue_.front());
    queue_.pop_front();
    const bool skip = error_ != nullptr && task.kind == TaskKind::work;
    lock.unlock();

    std::exception_ptr failure;
    if (!skip) {
      try {
        task.fn();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    // Release whatever the task captured before it counts as finished, so
    // that a host which saw it complete also sees its captures released.
    task.fn = nullptr;

    lock.lock();
    if (failure && !error_) error_ = std::move(failure);
    ++completed_;
    done_cv_.notify_all();
  }
}

}  // namespace tidepool
