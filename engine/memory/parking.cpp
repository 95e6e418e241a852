#include "engine/memory/parking.h"

#include <algorithm>

namespace tidepool {

std::optional<std::size_t> Parking::allocate(std::int64_t id, const AllocRequest& request) {
  released_.clear();
  reclaimed_ = false;
  if (auto own = std::find_if(parked_.begin(), parked_.end(), [&](const Parked& p) { return p.id == id; });
      own != parked_.end()) {
    if (own->bytes == round_up(request.bytes)) {
      const std::size_t offset = own->offset;
      parked_bytes_ -= own->bytes;
      parked_.erase(own);
      reclaimed_ = true;
      return offset;
    }
    give_back(own);  // a trace may reuse an id for a block of another size
  }
  for (;;) {
    if (auto offset = pool_.allocate(request)) return offset;
    if (parked_.empty()) return std::nullopt;
    give_back(parked_.begin());
  }
}

void Parking::free_after_copy(std::int64_t id, std::size_t offset, std::size_t bytes) {
  released_.clear();
  parked_.push_back({id, offset, round_up(bytes)});
  parked_bytes_ += round_up(bytes);
  while (parked_.size() > static_cast<std::size_t>(std::max(horizon_, 0))) give_back(parked_.begin());
}

void Parking::give_back(std::deque<Parked>::iterator it) {
  pool_.free(it->offset);
  released_.push_back(*it);
  parked_bytes_ -= it->bytes;
  parked_.erase(it);
}

PoolStats Parking::stats() const {
  PoolStats s = pool_.stats();
  s.load_bytes -= std::min(s.load_bytes, parked_bytes_);
  return s;
}

}  // namespace tidepool
