#include "engine/memory/allocators/free_list.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

auto by_offset = [](const Block& b, std::size_t offset) { return b.offset < offset; };

std::string range(std::size_t offset, std::size_t bytes) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(bytes) + ")";
}

}  // namespace

FreeList::FreeList(std::size_t pool_bytes) : pool_bytes_(pool_bytes) {
  if (pool_bytes_ > 0) blocks_.push_back({0, pool_bytes_});
}

std::size_t FreeList::take_low(std::size_t index, std::size_t bytes) {
  Block& b = blocks_[index];
  const std::size_t offset = b.offset;
  if (b.bytes == bytes)
    blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index));
  else
    b.offset += bytes, b.bytes -= bytes;
  largest_.reset();
  return offset;
}

std::optional<std::size_t> FreeList::take_best_fit(std::size_t bytes) {
  std::size_t best = blocks_.size();
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].bytes >= bytes && (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes)) {
      best = i;
      if (blocks_[i].bytes == bytes) break;  // nothing fits better, and it is the lowest such
    }
  if (best == blocks_.size()) return std::nullopt;
  return take_low(best, bytes);
}

std::optional<std::size_t> FreeList::take_first_fit(std::size_t bytes) {
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].bytes >= bytes) return take_low(i, bytes);
  return std::nullopt;
}

std::optional<std::size_t> FreeList::take_highest(std::size_t bytes) {
  for (std::size_t i = blocks_.size(); i-- > 0;) {
    Block& b = blocks_[i];
    if (b.bytes < bytes) continue;
    const std::size_t offset = b.end() - bytes;
    if (b.bytes == bytes)
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    else
      b.bytes -= bytes;
    largest_.reset();
    return offset;
  }
  return std::nullopt;
}

void FreeList::give_back(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  if (offset + bytes > pool_bytes_) throw std::logic_error("free of " + range(offset, bytes) + " runs past the pool");
  auto next = std::lower_bound(blocks_.begin(), blocks_.end(), offset, by_offset);
  if (next != blocks_.end() && next->offset < offset + bytes)
    throw std::logic_error("free of " + range(offset, bytes) + " overlaps a free block at " +
                           std::to_string(next->offset));
  const bool merge_prev = next != blocks_.begin() && std::prev(next)->end() >= offset;
  if (merge_prev && std::prev(next)->end() > offset)
    throw std::logic_error("free of " + range(offset, bytes) + " overlaps a free block at " +
                           std::to_string(std::prev(next)->offset));
  const bool merge_next = next != blocks_.end() && next->offset == offset + bytes;
  largest_.reset();
  if (merge_prev && merge_next) {
    std::prev(next)->bytes += bytes + next->bytes;
    blocks_.erase(next);
  } else if (merge_prev) {
    std::prev(next)->bytes += bytes;
  } else if (merge_next) {
    next->offset = offset;
    next->bytes += bytes;
  } else {
    blocks_.insert(next, {offset, bytes});
  }
}

std::size_t FreeList::largest() const {
  if (!largest_) {
    std::size_t m = 0;
    for (const Block& b : blocks_) m = std::max(m, b.bytes);
    largest_ = m;
  }
  return *largest_;
}

void LiveBlocks::add(std::size_t offset, std::size_t bytes) {
  auto at = std::lower_bound(blocks_.begin(), blocks_.end(), offset, by_offset);
  blocks_.insert(at, {offset, bytes});
  load_ += bytes;
  peak_load_ = std::max(peak_load_, load_);
  peak_extent_ = std::max(peak_extent_, blocks_.back().end());
}

std::size_t LiveBlocks::remove(std::size_t offset) {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset, by_offset);
  if (it == blocks_.end() || it->offset != offset)
    throw std::logic_error("free of offset " + std::to_string(offset) + ", which is not allocated");
  const std::size_t bytes = it->bytes;
  blocks_.erase(it);
  load_ -= bytes;
  return bytes;
}

}  // namespace tidepool
