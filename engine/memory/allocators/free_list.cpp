#include "engine/memory/allocators/free_list.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace tidepool {
namespace {

template <class B>
bool below(const B& b, std::size_t offset) {
  return b.offset < offset;
}

std::string range(std::size_t offset, std::size_t bytes) {
  return "[" + std::to_string(offset) + ", +" + std::to_string(bytes) + ")";
}

}  // namespace

FreeList::FreeList(std::size_t pool_bytes, bool all_free) : pool_bytes_(pool_bytes) {
  if (all_free && pool_bytes_ > 0) blocks_.push_back({0, pool_bytes_});
  largest_ = blocks_.empty() ? 0 : pool_bytes_;
}

void FreeList::take_from(std::size_t index, std::size_t offset, std::size_t bytes) {
  Block& b = blocks_[index];
  if (!largest_stale_ && b.bytes == largest_) largest_stale_ = true;  // the largest may be this one
  const std::size_t end = b.end();
  if (offset == b.offset) {
    if (b.bytes == bytes)
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(index));
    else
      b.offset += bytes, b.bytes -= bytes;
  } else {
    b.bytes = offset - b.offset;
    if (end > offset + bytes)
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(index) + 1, {offset + bytes, end - offset - bytes});
  }
}

std::optional<std::size_t> FreeList::take_best_fit(std::size_t bytes) {
  std::size_t best = blocks_.size();
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].bytes >= bytes && (best == blocks_.size() || blocks_[i].bytes < blocks_[best].bytes)) {
      best = i;
      if (blocks_[i].bytes == bytes) break;  // nothing fits better, and it is the lowest such
    }
  if (best == blocks_.size()) return std::nullopt;
  const std::size_t offset = blocks_[best].offset;
  take_from(best, offset, bytes);
  return offset;
}

std::optional<std::size_t> FreeList::take_first_fit(std::size_t bytes) {
  for (std::size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].bytes >= bytes) {
      const std::size_t offset = blocks_[i].offset;
      take_from(i, offset, bytes);
      return offset;
    }
  return std::nullopt;
}

std::optional<std::size_t> FreeList::take_highest(std::size_t bytes) {
  for (std::size_t i = blocks_.size(); i-- > 0;)
    if (blocks_[i].bytes >= bytes) {
      const std::size_t offset = blocks_[i].end() - bytes;
      take_from(i, offset, bytes);
      return offset;
    }
  return std::nullopt;
}

bool FreeList::take_at(std::size_t offset, std::size_t bytes) {
  auto it = std::upper_bound(blocks_.begin(), blocks_.end(), offset,
                             [](std::size_t o, const Block& b) { return o < b.offset; });
  if (it == blocks_.begin()) return false;
  --it;
  if (offset + bytes > it->end()) return false;
  take_from(static_cast<std::size_t>(it - blocks_.begin()), offset, bytes);
  return true;
}

bool FreeList::fenced(std::size_t offset) const {
  return !fences_.empty() && std::binary_search(fences_.begin(), fences_.end(), offset);
}

void FreeList::add_fence(std::size_t offset) {
  if (!fences_.empty() && offset <= fences_.back())
    throw std::logic_error("fence at " + std::to_string(offset) + " below the last one");
  fences_.push_back(offset);
}

void FreeList::give_back(std::size_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  if (offset + bytes > pool_bytes_) throw std::logic_error("free of " + range(offset, bytes) + " runs past the pool");
  auto next = std::lower_bound(blocks_.begin(), blocks_.end(), offset, below<Block>);
  if (next != blocks_.end() && next->offset < offset + bytes)
    throw std::logic_error("free of " + range(offset, bytes) + " overlaps a free block at " +
                           std::to_string(next->offset));
  if (next != blocks_.begin() && std::prev(next)->end() > offset)
    throw std::logic_error("free of " + range(offset, bytes) + " overlaps a free block at " +
                           std::to_string(std::prev(next)->offset));
  const bool merge_prev = next != blocks_.begin() && std::prev(next)->end() == offset && !fenced(offset);
  const bool merge_next = next != blocks_.end() && next->offset == offset + bytes && !fenced(next->offset);
  if (merge_prev && merge_next) {
    std::prev(next)->bytes += bytes + next->bytes;
    grew(std::prev(next)->bytes);
    blocks_.erase(next);
  } else if (merge_prev) {
    std::prev(next)->bytes += bytes;
    grew(std::prev(next)->bytes);
  } else if (merge_next) {
    next->offset = offset;
    next->bytes += bytes;
    grew(next->bytes);
  } else {
    blocks_.insert(next, {offset, bytes});
    grew(bytes);
  }
}

std::size_t FreeList::largest() const {
  if (largest_stale_) {
    largest_ = 0;
    for (const Block& b : blocks_) largest_ = std::max(largest_, b.bytes);
    largest_stale_ = false;
  }
  return largest_;
}

void LiveBlocks::add(std::size_t offset, std::size_t bytes, int tag) {
  blocks_.insert(std::lower_bound(blocks_.begin(), blocks_.end(), offset, below<Live>), {offset, bytes, tag});
  load_ += bytes;
}

LiveBlocks::Live* LiveBlocks::find(std::size_t offset) {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset, below<Live>);
  return it != blocks_.end() && it->offset == offset ? &*it : nullptr;
}

LiveBlocks::Live LiveBlocks::remove(std::size_t offset) {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset, below<Live>);
  if (it == blocks_.end() || it->offset != offset)
    throw std::logic_error("free of offset " + std::to_string(offset) + ", which is not allocated");
  const Live l = *it;
  blocks_.erase(it);
  load_ -= l.bytes;
  return l;
}

}  // namespace tidepool
