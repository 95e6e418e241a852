// The events of a data-parallel run's other ranks, for the window on rank 0
// (app/window_ranks.h): each rank's EventForwarder sends what its training
// records to rank 0 a few times a second, from a thread of its own, so
// training never waits for the network or the window; rank 0's RankEvents
// receives them, on a thread of its own, into one RingSink per rank, which
// the window reads as it reads rank 0's.
//
// A message (Communicator::send, tag kEventsTag) is a header, u64 session
// and u8 last, then event records (engine/observe/event_records.h) that
// continue the session's previous message. A rank that starts over (a
// teaching scenario) starts a new session, and rank 0 clears that rank's
// ring; `last` says the rank forwards nothing more.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/comm/communicator.h"
#include "engine/observe/event_records.h"
#include "engine/observe/events.h"
#include "engine/observe/sinks/ring_sink.h"

namespace tidepool {

inline constexpr int kEventsTag = 0x7e01;
// How often a rank forwards its events: the window refreshes its pictures
// five times a second (ui/dashboard.cpp).
inline constexpr std::chrono::milliseconds kForwardInterval{200};
// Events waiting to be sent, at most: past it (rank 0 not taking them) new
// events are dropped and counted, so memory stays bounded.
inline constexpr std::size_t kMaxForwardBytes = std::size_t{32} << 20;

class EventForwarder final : public EventSink {
 public:
  // Starts the sending thread. `comm` is a rank other than 0, and outlives
  // the forwarder.
  explicit EventForwarder(Communicator& comm, std::chrono::milliseconds interval = kForwardInterval);
  // finish(), if it was not called.
  ~EventForwarder() override;
  EventForwarder(const EventForwarder&) = delete;
  EventForwarder& operator=(const EventForwarder&) = delete;

  void on_span(const SpanEvent& e) override { record(e); }
  void on_alloc(const AllocEvent& e) override { record(e); }
  void on_load(const LoadSample& e) override { record(e); }
  void on_iteration(const IterationSummary& e) override { record(e); }
  // Sends what waits now rather than at the next interval.
  void flush() override;

  // The rank starts over: events from here on are a new session, and
  // what was not sent of the old one is dropped.
  void start_over();
  // Sends what waits and the last message, then stops the thread. A send
  // that failed (rank 0 gone) is not retried: its error is kept in error().
  void finish();

  // Events dropped because too many waited.
  std::uint64_t dropped() const;
  // Messages sent to rank 0 so far, the last one included: what a receiver
  // that must have taken all of them waits for (RankEvents::wait_for_messages).
  std::uint64_t sent() const;
  // Why sending stopped (a CommError's text), or "".
  std::string error() const;

 private:
  template <typename Event>
  void record(const Event& e) {
    std::lock_guard lock(mutex_);
    if (finishing_ || pending_.size() > kMaxForwardBytes) {
      ++dropped_;
      return;
    }
    encoder_.encode(e, pending_);
  }
  void run(std::chrono::milliseconds interval);
  // Sends pending_ (and `last`); unlocks while sending.
  void send(std::unique_lock<std::mutex>& lock, bool last);

  Communicator& comm_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool finishing_ = false, flush_ = false;
  std::uint64_t session_ = 0;
  EventEncoder encoder_;  // this session's
  std::vector<unsigned char> pending_;
  std::uint64_t dropped_ = 0;
  std::uint64_t sent_ = 0;
  std::string error_;
  std::thread thread_;
};

class RankEvents {
 public:
  // Starts the receiving thread. `comm` is rank 0, and outlives this.
  RankEvents(Communicator& comm, RingCapacities capacities);
  // Stops receiving at once (finish() waits for the last messages).
  ~RankEvents();
  RankEvents(const RankEvents&) = delete;
  RankEvents& operator=(const RankEvents&) = delete;

  int ranks() const { return static_cast<int>(rings_.size()); }
  // The events rank `rank` (1 or more) forwarded, its current session's.
  const RingSink& ring(int rank) const;
  // Whether rank `rank` sent its last message.
  bool finished(int rank) const;
  // Messages that could not be read, one line each ("rank 1: ..."); the
  // rank's events after one are ignored (its later records name strings
  // of the lost one).
  std::vector<std::string> problems() const;

  // Waits, with no time limit, until `count` messages from the other ranks
  // have been taken, read or not (or
  // receiving stopped), and returns how many were. For a caller that knows
  // how many were sent (EventForwarder::sent): the tests, which decide on
  // what was received, never on how long it took.
  std::uint64_t wait_for_messages(std::uint64_t count);

  // Waits until every rank has sent its last message, or `timeout` has
  // passed (a rank that died), then stops receiving. True when all came.
  bool finish(std::chrono::milliseconds timeout);

 private:
  struct Peer {
    std::uint64_t session = ~std::uint64_t{0};  // none yet
    EventDecoder decoder;
    bool finished = false, broken = false;
  };
  void run();
  void take(const Message& m);
  bool all_finished() const;  // under mutex_

  Communicator& comm_;
  std::vector<std::unique_ptr<RingSink>> rings_;  // [0] unused: rank 0's events are its own
  std::vector<Peer> peers_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false;
  std::uint64_t taken_ = 0;  // messages, under mutex_
  std::vector<std::string> problems_;
  std::thread thread_;
};

}  // namespace tidepool
