#include "engine/allocators/free_list.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tidepool {

FreeList::FreeList(std::size_t pool_bytes) : pool_bytes_(pool_bytes) {
  if (pool_bytes_ > 0) insert(0, pool_bytes_);
}

void FreeList::insert(std::size_t offset, std::size_t bytes) {
  by_offset_.emplace(offset, bytes);
  by_size_.emplace(bytes, offset);
}

void FreeList::erase(std::map<std::size_t, std::size_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_offset_.erase(it);
}

std::size_t FreeList::take_low(std::map<std::size_t, std::size_t>::iterator it, std::size_t bytes) {
  const std::size_t offset = it->first, size = it->second;
  erase(it);
  if (size > bytes) insert(offset + bytes, size - bytes);
  return offset;
}

std::optional<std::size_t> FreeList::take_best_fit(std::size_t bytes) {
  auto best = by_size_.lower_bound({bytes, 0});
  if (best == by_size_.end()) return std::nullopt;
  return take_low(by_offset_.find(best->second), bytes);
}

std::optional<std::size_t> FreeList::take_first_fit(std::size_t bytes) {
  for (auto it = by_offset_.begin(); it != by_offset_.end(); ++it)
    if (it->second >= bytes) return take_low(it, bytes);
  return std::nullopt;
}

std::optional<std::size_t> FreeList::take_highest(std::size_t bytes) {
  for (auto it = by_offset_.rbegin(); it != by_offset_.rend(); ++it) {
    if (it->second < bytes) continue;
    const std::size_t offset = it->first, size = it->second;
    erase(std::next(it).base());
    if (size > bytes) insert(offset, size - bytes);
    return offset + size - bytes;
  }
  return std::nullopt;
}

void FreeList::give_back(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  if (offset + bytes > pool_bytes_)
    throw std::logic_error("free of [" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                           ") runs past the pool");
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first < offset + bytes)
    throw std::logic_error("free of a block that overlaps a free block at " +
                           std::to_string(next->first));
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > offset)
      throw std::logic_error("free of a block that overlaps a free block at " +
                             std::to_string(prev->first));
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      bytes += prev->second;
      erase(prev);
    }
  }
  if (next != by_offset_.end() && next->first == offset + bytes) {
    bytes += next->second;
    erase(next);
  }
  insert(offset, bytes);
}

std::size_t FreeList::largest() const { return by_size_.empty() ? 0 : by_size_.rbegin()->first; }

void LiveBlocks::add(std::size_t offset, std::size_t bytes) {
  blocks_.emplace(offset, bytes);
  load_ += bytes;
  peak_load_ = std::max(peak_load_, load_);
  peak_extent_ = std::max(peak_extent_, blocks_.rbegin()->first + blocks_.rbegin()->second);
}

std::size_t LiveBlocks::remove(std::size_t offset) {
  auto it = blocks_.find(offset);
  if (it == blocks_.end())
    throw std::logic_error("free of offset " + std::to_string(offset) + ", which is not allocated");
  const std::size_t bytes = it->second;
  blocks_.erase(it);
  load_ -= bytes;
  return bytes;
}

}  // namespace tidepool
