// Ranks that are threads of one process: a data-parallel run without
// mpirun, for tests (every rank's trainer in one process, the numbers
// compared directly) and anything else that wants N ranks cheaply.
//
//   LocalGroup group(2);
//   std::jthread other([&] { train(group.rank(1)); });
//   train(group.rank(0));
//
// Sums add the ranks' values in rank order, so every rank gets the same
// bits. Each collective is two barriers: every rank publishes its buffer,
// all read what they need, and only then does any write its result.
#pragma once

#include <barrier>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/comm/communicator.h"

namespace tidepool {

class LocalGroup {
 public:
  explicit LocalGroup(int ranks);
  ~LocalGroup();
  LocalGroup(const LocalGroup&) = delete;
  LocalGroup& operator=(const LocalGroup&) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  // Rank i's communicator, for the thread that runs rank i.
  Communicator& rank(int i);

 private:
  class Rank;
  struct Shared {
    explicit Shared(int n) : barrier(n), slots(static_cast<std::size_t>(n)), mail(static_cast<std::size_t>(n)) {}
    std::barrier<> barrier;
    std::vector<const void*> slots;  // what each rank publishes for the current collective
    std::mutex mail_mutex;
    std::vector<std::deque<std::pair<int, Message>>> mail;  // each rank's (tag, message), oldest first
  };
  Shared shared_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace tidepool
