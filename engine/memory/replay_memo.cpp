#include "engine/memory/replay_memo.h"

#include <algorithm>
#include <iterator>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>

#include "engine/core/fnv1a.h"

namespace tidepool {
namespace {

// Every field of an event, the step, the stream and the role included
// (TraceEvent::operator== leaves them out, but a replay reports the step
// and the roles in its figures, and pytorch keeps its blocks per stream).
bool same_events(const AllocTrace& a, const AllocTrace& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const TraceEvent& x, const TraceEvent& y) {
    return x == y && x.step == y.step && x.stream == y.stream && x.role == y.role;
  });
}

using Requests = std::vector<AllocTrace>;

bool same_requests(const Requests& kept, const MemoRequests& asked) {
  if (kept.size() != asked.traces.size()) return false;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (!same_events(kept[i], *asked.traces[i])) return false;
  return true;
}

std::size_t bytes_of(const Requests& r) {
  std::size_t bytes = 0;
  for (const AllocTrace& t : r) bytes += t.size() * sizeof(TraceEvent);
  return bytes;
}

// The questions asked of the requests: which replay, under which policy,
// in which pool, parking how much.
struct Question {
  enum class Kind { schedule_replay, pool_search } kind;
  std::string heuristic;
  std::size_t pool_bytes;  // pool_search: 0 (from the peak load)
  int park_horizon;
  bool operator==(const Question&) const = default;
};

class Memo {
 public:
  using Answer = std::variant<ScheduleReplay, PoolSearch>;

  std::optional<Answer> find(const MemoRequests& asked, const Question& q) {
    const std::lock_guard lock(mutex_);
    const auto [first, last] = index_.equal_range(key(asked, q));
    for (auto it = first; it != last; ++it) {
      const Entry& e = *it->second;
      if (e.question == q && e.fingerprint == asked.fingerprint && same_requests(*e.requests, asked)) {
        entries_.splice(entries_.begin(), entries_, it->second);  // most recently used first
        return e.answer;
      }
    }
    return std::nullopt;
  }

  void keep(const MemoRequests& asked, const Question& q, Answer answer) {
    const std::lock_guard lock(mutex_);
    const std::size_t k = key(asked, q);
    const auto [first, last] = index_.equal_range(k);
    for (auto it = first; it != last; ++it)
      if (it->second->question == q && same_requests(*it->second->requests, asked)) return;  // kept meanwhile
    std::shared_ptr<const Requests> requests = share(asked);
    if (!requests) return;  // too large to keep
    entries_.push_front({q, asked.fingerprint, std::move(requests), std::move(answer), k});
    index_.emplace(k, entries_.begin());
    while (bytes_ > kMemoBytes || entries_.size() > kMaxAnswers) drop_oldest();
  }

  std::size_t bytes() {
    const std::lock_guard lock(mutex_);
    return bytes_;
  }

  void clear() {
    const std::lock_guard lock(mutex_);
    index_.clear();
    entries_.clear();
    bytes_ = 0;
  }

 private:
  // Answers are small; the bound on them only keeps a long session's
  // memo from growing without end.
  static constexpr std::size_t kMaxAnswers = std::size_t{1} << 14;

  struct Entry {
    Question question;
    std::uint64_t fingerprint;
    std::shared_ptr<const Requests> requests;
    Answer answer;
    std::size_t key;
  };

  static std::size_t key(const MemoRequests& asked, const Question& q) {
    std::uint64_t h = asked.fingerprint;
    h = fnv1a(q.heuristic.data(), q.heuristic.size(), h);
    h = fnv1a(&q.pool_bytes, sizeof q.pool_bytes, h);
    h = fnv1a(&q.park_horizon, sizeof q.park_horizon, h);
    const int kind = static_cast<int>(q.kind);
    return static_cast<std::size_t>(fnv1a(&kind, sizeof kind, h));
  }

  // The kept copy of these requests, made once however many answers
  // refer to it; nothing if it alone would pass the memo's bytes.
  std::shared_ptr<const Requests> share(const MemoRequests& asked) {
    for (const Entry& e : entries_)
      if (e.fingerprint == asked.fingerprint && same_requests(*e.requests, asked)) return e.requests;
    Requests copy;
    for (const AllocTrace* t : asked.traces) copy.push_back(*t);
    const std::size_t bytes = bytes_of(copy);
    if (bytes > kMemoBytes) return nullptr;
    bytes_ += bytes;
    return std::make_shared<const Requests>(std::move(copy));
  }

  void drop_oldest() {
    const auto last = std::prev(entries_.end());
    const auto [first, end] = index_.equal_range(last->key);
    for (auto it = first; it != end; ++it)
      if (it->second == last) {
        index_.erase(it);
        break;
      }
    if (last->requests.use_count() == 1) bytes_ -= bytes_of(*last->requests);
    entries_.erase(last);
  }

  std::mutex mutex_;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_multimap<std::size_t, std::list<Entry>::iterator> index_;
  std::size_t bytes_ = 0;  // of the distinct requests kept
};

Memo& memo() {
  static Memo kept;
  return kept;
}

}  // namespace

std::uint64_t fingerprint(const AllocTrace& trace, std::uint64_t hash) {
  // FNV-1a's step a word at a time: a key for the index, which compares
  // the events themselves anyway.
  auto mix = [&](std::uint64_t v) { hash = (hash ^ v) * 0x100000001b3ull; };
  for (const TraceEvent& e : trace) {
    mix(static_cast<std::uint64_t>(e.id));
    mix(e.bytes);
    mix(static_cast<std::uint64_t>(e.kind) | std::uint64_t{e.will_offload} << 8 | std::uint64_t{e.after_copy} << 9 |
        static_cast<std::uint64_t>(e.role) << 16 | static_cast<std::uint64_t>(static_cast<std::uint32_t>(e.step)) << 32);
    mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(e.stream)));
  }
  return hash;
}

std::optional<ScheduleReplay> find_schedule_replay(const MemoRequests& traces, std::string_view heuristic,
                                                   std::size_t pool_bytes, int park_horizon) {
  auto a = memo().find(traces, {Question::Kind::schedule_replay, std::string(heuristic), pool_bytes, park_horizon});
  if (!a) return std::nullopt;
  return std::get<ScheduleReplay>(*a);
}

void keep_schedule_replay(const MemoRequests& traces, std::string_view heuristic, std::size_t pool_bytes,
                          int park_horizon, const ScheduleReplay& answer) {
  memo().keep(traces, {Question::Kind::schedule_replay, std::string(heuristic), pool_bytes, park_horizon}, answer);
}

std::optional<PoolSearch> find_pool_search(const MemoRequests& trace, std::string_view heuristic, int park_horizon) {
  auto a = memo().find(trace, {Question::Kind::pool_search, std::string(heuristic), 0, park_horizon});
  if (!a) return std::nullopt;
  return std::get<PoolSearch>(*a);
}

void keep_pool_search(const MemoRequests& trace, std::string_view heuristic, int park_horizon,
                      const PoolSearch& answer) {
  memo().keep(trace, {Question::Kind::pool_search, std::string(heuristic), 0, park_horizon}, answer);
}

void forget_replays() { memo().clear(); }

std::size_t kept_replay_bytes() { return memo().bytes(); }

}  // namespace tidepool
