#include "engine/comm/local_group.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tidepool {

class LocalGroup::Rank final : public Communicator {
 public:
  Rank(Shared& shared, int rank) : shared_(shared), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(shared_.slots.size()); }
  std::string transport() const override { return "local"; }

  void all_reduce_sum(float* data, std::size_t count) override { sum(data, count); }
  void all_reduce_sum(double* data, std::size_t count) override { sum(data, count); }

  std::int64_t all_reduce_max(std::int64_t value) override {
    std::int64_t result = value;
    exchange(&value, [&](const std::vector<const void*>& all) {
      for (const void* p : all) result = std::max(result, *static_cast<const std::int64_t*>(p));
    });
    return result;
  }

  void broadcast(void* data, std::size_t bytes, int root) override {
    if (root < 0 || root >= size()) throw std::invalid_argument("broadcast from rank " + std::to_string(root));
    std::vector<std::byte> copy;
    exchange(data, [&](const std::vector<const void*>& all) {
      if (rank_ != root) copy.assign(static_cast<const std::byte*>(all[root]), static_cast<const std::byte*>(all[root]) + bytes);
    });
    if (rank_ != root && bytes) std::memcpy(data, copy.data(), bytes);
  }

  void send(int to, int tag, const std::vector<unsigned char>& bytes) override {
    if (to < 0 || to >= size()) throw std::invalid_argument("a message to rank " + std::to_string(to));
    std::lock_guard lock(shared_.mail_mutex);
    shared_.mail[static_cast<std::size_t>(to)].emplace_back(tag, Message{rank_, bytes});
  }

  std::optional<Message> try_receive(int tag) override {
    std::lock_guard lock(shared_.mail_mutex);
    auto& mine = shared_.mail[static_cast<std::size_t>(rank_)];
    for (auto it = mine.begin(); it != mine.end(); ++it) {
      if (it->first != tag) continue;
      Message m = std::move(it->second);
      mine.erase(it);
      return m;
    }
    return std::nullopt;
  }

  void abort(int) override {}  // threads of the caller's process: its exceptions stop them

  std::vector<std::uint64_t> all_gather(std::uint64_t value) override {
    std::vector<std::uint64_t> out;
    exchange(&value, [&](const std::vector<const void*>& all) {
      for (const void* p : all) out.push_back(*static_cast<const std::uint64_t*>(p));
    });
    return out;
  }

 private:
  // Publishes `mine`, lets `read` see every rank's, and returns once no
  // rank reads any more: only then may a caller overwrite its buffer.
  template <typename Read>
  void exchange(const void* mine, Read read) {
    shared_.slots[static_cast<std::size_t>(rank_)] = mine;
    shared_.barrier.arrive_and_wait();
    read(shared_.slots);
    shared_.barrier.arrive_and_wait();
  }

  template <typename T>
  void sum(T* data, std::size_t count) {
    std::vector<T> total(count, T{0});
    exchange(data, [&](const std::vector<const void*>& all) {
      for (const void* p : all) {  // in rank order: the same bits on every rank
        const T* x = static_cast<const T*>(p);
        for (std::size_t i = 0; i < count; ++i) total[i] += x[i];
      }
    });
    std::copy(total.begin(), total.end(), data);
  }

  Shared& shared_;
  int rank_;
};

LocalGroup::LocalGroup(int ranks) : shared_(std::max(ranks, 1)) {
  if (ranks < 1) throw std::invalid_argument("a group needs at least one rank, not " + std::to_string(ranks));
  for (int i = 0; i < ranks; ++i) ranks_.push_back(std::make_unique<Rank>(shared_, i));
}

LocalGroup::~LocalGroup() = default;

Communicator& LocalGroup::rank(int i) {
  if (i < 0 || i >= size())
    throw std::out_of_range("rank " + std::to_string(i) + " of a group of " + std::to_string(size()));
  return *ranks_[static_cast<std::size_t>(i)];
}

}  // namespace tidepool
