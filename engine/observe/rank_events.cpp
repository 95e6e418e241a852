#include "engine/observe/rank_events.h"

#include <stdexcept>
#include <utility>

namespace tidepool {
namespace {

constexpr std::size_t kHeaderBytes = 9;  // u64 session, u8 last
// How often rank 0 looks for messages: well under the forwarding interval.
constexpr std::chrono::milliseconds kPollInterval{20};

}  // namespace

EventForwarder::EventForwarder(Communicator& comm, std::chrono::milliseconds interval) : comm_(comm) {
  if (comm.rank() == 0) throw std::invalid_argument("rank 0 keeps its own events: it forwards none");
  thread_ = std::thread([this, interval] { run(interval); });
}

EventForwarder::~EventForwarder() { finish(); }

void EventForwarder::flush() {
  {
    std::lock_guard lock(mutex_);
    flush_ = true;
  }
  wake_.notify_all();
}

void EventForwarder::start_over() {
  std::lock_guard lock(mutex_);
  ++session_;
  encoder_ = EventEncoder{};
  pending_.clear();
}

void EventForwarder::finish() {
  {
    std::lock_guard lock(mutex_);
    finishing_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t EventForwarder::dropped() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

std::uint64_t EventForwarder::sent() const {
  std::lock_guard lock(mutex_);
  return sent_;
}

std::string EventForwarder::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}

void EventForwarder::run(std::chrono::milliseconds interval) {
  std::unique_lock lock(mutex_);
  while (!finishing_) {
    wake_.wait_for(lock, interval, [&] { return finishing_ || flush_; });
    flush_ = false;
    if (!finishing_ && !pending_.empty() && error_.empty()) send(lock, false);
  }
  if (error_.empty()) send(lock, true);
}

void EventForwarder::send(std::unique_lock<std::mutex>& lock, bool last) {
  std::vector<unsigned char> message(kHeaderBytes);
  for (int i = 0; i < 8; ++i) message[static_cast<std::size_t>(i)] = static_cast<unsigned char>(session_ >> (8 * i));
  message[8] = last ? 1 : 0;
  message.insert(message.end(), pending_.begin(), pending_.end());
  pending_.clear();
  lock.unlock();  // training records on while the bytes travel
  std::string failed;
  try {
    comm_.send(0, kEventsTag, message);
  } catch (const CommError& e) {
    failed = e.what();
  }
  lock.lock();
  if (failed.empty())
    ++sent_;
  else
    error_ = failed;
}

RankEvents::RankEvents(Communicator& comm, RingCapacities capacities)
    : comm_(comm), peers_(static_cast<std::size_t>(comm.size())) {
  if (comm.rank() != 0) throw std::invalid_argument("only rank 0 receives the other ranks' events");
  for (int r = 0; r < comm.size(); ++r)
    rings_.push_back(r == 0 ? nullptr : std::make_unique<RingSink>(capacities));
  thread_ = std::thread([this] { run(); });
}

RankEvents::~RankEvents() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

const RingSink& RankEvents::ring(int rank) const {
  if (rank < 1 || rank >= ranks())
    throw std::out_of_range("rank " + std::to_string(rank) + ": the other ranks are 1 to " +
                            std::to_string(ranks() - 1));
  return *rings_[static_cast<std::size_t>(rank)];
}

bool RankEvents::finished(int rank) const {
  std::lock_guard lock(mutex_);
  return peers_.at(static_cast<std::size_t>(rank)).finished;
}

std::vector<std::string> RankEvents::problems() const {
  std::lock_guard lock(mutex_);
  return problems_;
}

std::uint64_t RankEvents::wait_for_messages(std::uint64_t count) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return taken_ >= count || stop_; });
  return taken_;
}

bool RankEvents::all_finished() const {
  for (std::size_t r = 1; r < peers_.size(); ++r)
    if (!peers_[r].finished) return false;
  return true;
}

bool RankEvents::finish(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool all = changed_.wait_for(lock, timeout, [&] { return all_finished(); });
  stop_ = true;
  lock.unlock();
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
  return all;
}

void RankEvents::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    lock.unlock();
    while (auto m = comm_.try_receive(kEventsTag)) {
      take(*m);
      std::lock_guard counted(mutex_);
      ++taken_;
    }
    lock.lock();
    changed_.notify_all();
    changed_.wait_for(lock, kPollInterval, [&] { return stop_; });
  }
}

void RankEvents::take(const Message& m) {
  auto problem = [&](const std::string& what) {
    std::lock_guard lock(mutex_);
    problems_.push_back("rank " + std::to_string(m.from) + ": " + what);
    if (m.from > 0 && m.from < ranks()) peers_[static_cast<std::size_t>(m.from)].broken = true;
  };
  if (m.from < 1 || m.from >= ranks()) return problem("a message from a rank that forwards no events");
  if (m.bytes.size() < kHeaderBytes) return problem("a message of " + std::to_string(m.bytes.size()) + " bytes");
  Peer& peer = peers_[static_cast<std::size_t>(m.from)];
  RingSink& ring = *rings_[static_cast<std::size_t>(m.from)];
  std::uint64_t session = 0;
  for (int i = 0; i < 8; ++i) session |= static_cast<std::uint64_t>(m.bytes[static_cast<std::size_t>(i)]) << (8 * i);
  if (session != peer.session) {  // the rank started over
    peer.session = session;
    peer.decoder = EventDecoder{};
    peer.broken = false;
    ring.clear();
  }
  if (!peer.broken) {
    try {
      const std::size_t end = peer.decoder.decode(m.bytes.data(), m.bytes.size(), kHeaderBytes, &ring);
      if (end != m.bytes.size()) problem("an end record inside a message, at byte " + std::to_string(end));
    } catch (const EventDecodeError& e) {
      problem(std::string("its events cannot be read: ") + e.what());
    }
  }
  if (m.bytes[8]) {
    std::lock_guard lock(mutex_);
    peer.finished = true;
  }
}

}  // namespace tidepool
