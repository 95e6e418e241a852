// One stream of the cpu device: a worker thread that runs queued tasks in
// order. It is the host's stand-in for a CUDA stream, and its completion
// counter is what the cpu device's events are made of: task number n (the
// first task is 1) is finished exactly when completed() >= n, because tasks
// finish in the order they were queued.
//
// Failures. A task that throws does not take the process down: the worker
// keeps the first exception (take_error() hands it to the host) and, until
// the host has taken it, skips ordinary tasks, because they would compute
// on the output of the one that failed. Control tasks (event markers and
// cross-stream waits, queued with TaskKind::control) still run, so events
// keep completing and the ordering between streams is never silently
// dropped. Skipped tasks count as completed, so nobody waits forever.
//
// Shutdown. The destructor (or shut_down()) lets the worker finish every
// task already queued, then joins it. A queued task that waits on another
// stream is fine as long as that stream is still running, which is why the
// cpu device shuts all of its streams down before destroying any of them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tidepool {

enum class TaskKind : std::uint8_t {
  work,     // user work: skipped while the stream holds an untaken error
  control,  // bookkeeping that must always run (event markers, waits)
};

class WorkerStream {
 public:
  // `nice` > 0 lowers the worker's scheduling priority by that much below
  // its creator's (Linux niceness, at most 19; threads it starts, such as
  // its OpenMP pool, inherit it).
  explicit WorkerStream(std::string name, int nice = 0);
  ~WorkerStream();
  WorkerStream(const WorkerStream&) = delete;
  WorkerStream& operator=(const WorkerStream&) = delete;

  // Queues a task and returns its sequence number (1, 2, ...). Throws
  // std::logic_error after shut_down() and std::invalid_argument for an
  // empty function.
  std::uint64_t enqueue(std::function<void()> task, TaskKind kind = TaskKind::work);

  // Blocks the calling thread until task `seq` has finished. Safe from the
  // host and from other streams' workers; calling it from this stream's own
  // worker for a later task would deadlock and is a caller bug. Throws
  // std::invalid_argument for a sequence number not handed out yet, which
  // would otherwise never complete.
  void wait_for(std::uint64_t seq);
  // Non-blocking: has task `seq` finished?
  bool reached(std::uint64_t seq) const;
  // Blocks until every task queued so far has finished.
  void drain();

  std::uint64_t enqueued() const;   // sequence number of the last task queued
  std::uint64_t completed() const;  // number of tasks finished (run or skipped)

  // The first exception a task threw since the last call, or null. Taking
  // it lets the stream run ordinary tasks again.
  std::exception_ptr take_error();

  // Finishes the queued tasks and joins the worker. Idempotent.
  void shut_down();

  const std::string& name() const { return name_; }

 private:
  struct Task {
    std::function<void()> fn;
    TaskKind kind = TaskKind::work;
  };

  void run();

  const std::string name_;
  const int nice_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;  // the worker sleeps here for tasks or a stop
  std::condition_variable done_cv_;  // waiters sleep here for completions
  std::deque<Task> queue_;
  std::uint64_t enqueued_ = 0;
  std::uint64_t completed_ = 0;
  bool stopping_ = false;
  std::exception_ptr error_;
  // Declared last so that the worker starts after everything it reads.
  std::thread thread_;
};

}  // namespace tidepool
