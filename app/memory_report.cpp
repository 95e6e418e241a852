#include "app/memory_report.h"

#include "engine/core/bytes_text.h"
#include "engine/memory/parking.h"

namespace tidepool::app {

int park_horizon_number(int park_horizon) { return park_horizon == kParkUntilNeeded ? -1 : park_horizon; }

nlohmann::json memory_json(const MemorySummary& m) {
  return {{"pool_bytes", m.pool_bytes},
          {"needed_pool_bytes", m.needed_pool_bytes},
          {"minimum_pool_bytes", m.minimum_pool_bytes},
          {"peak_load_bytes", m.peak_load_bytes},
          {"footprint_bytes", m.footprint_bytes},
          {"competitive_ratio", m.competitive_ratio()},
          {"largest_free_at_peak_bytes", m.largest_free_at_peak_bytes},
          {"offloaded_bytes", m.offloaded_bytes},
          {"pinned_host_bytes", m.pinned_bytes},
          {"pageable_host_bytes", m.pageable_bytes},
          {"uncompressed_pinned_bytes", m.uncompressed_pinned_bytes},
          {"load_limit_bytes", m.load_limit_bytes},
          {"parks_offloads", m.park_horizon > 0},
          {"park_horizon", park_horizon_number(m.park_horizon)},
          {"parking_pool_bytes", m.parking_pool_bytes},
          {"arena_bytes", m.arena_bytes}};
}

MemorySummary memory_from_json(const nlohmann::json& j) {
  MemorySummary m;
  auto bytes = [&](const char* key) { return j.value(key, std::size_t{0}); };
  m.pool_bytes = bytes("pool_bytes");
  m.needed_pool_bytes = bytes("needed_pool_bytes");
  m.minimum_pool_bytes = bytes("minimum_pool_bytes");
  m.peak_load_bytes = bytes("peak_load_bytes");
  m.footprint_bytes = bytes("footprint_bytes");
  m.largest_free_at_peak_bytes = bytes("largest_free_at_peak_bytes");
  m.offloaded_bytes = bytes("offloaded_bytes");
  m.pinned_bytes = bytes("pinned_host_bytes");
  m.pageable_bytes = bytes("pageable_host_bytes");  // 0 in runs from before --host-memory
  m.uncompressed_pinned_bytes = bytes("uncompressed_pinned_bytes");
  m.load_limit_bytes = bytes("load_limit_bytes");
  const int park_horizon = j.value("park_horizon", 0);
  m.park_horizon = park_horizon < 0 ? kParkUntilNeeded : park_horizon;
  m.parking_pool_bytes = bytes("parking_pool_bytes");
  // Runs from before the arena was written reserved at least their pool.
  m.arena_bytes = j.contains("arena_bytes") ? bytes("arena_bytes") : m.pool_bytes;
  return m;
}

std::vector<std::string> memory_lines(const MemorySummary& m, const MemorySettings& s, int compress_threads) {
  std::vector<std::string> lines;
  lines.push_back("memory pool: " + format_bytes(m.pool_bytes) + " (peak load " + format_bytes(m.peak_load_bytes) +
                  ", footprint " + format_bytes(m.footprint_bytes) + ", smallest workable " +
                  format_bytes(m.minimum_pool_bytes) + "; " + s.heuristic + ", mode " + to_string(s.mode) + ", algo " +
                  to_string(s.scheme) + ", " + to_string(s.transfer) + ", " + to_string(s.order) + "); pinned " +
                  format_bytes(m.pinned_bytes));
  if (s.host_memory == HostMemory::pageable && m.pageable_bytes > 0)
    lines.push_back("pageable offloads: " + format_bytes(m.pageable_bytes) + " of ordinary host memory, copied through " +
                    format_bytes(m.pinned_bytes) + " of pinned staging buffers");
  if (s.copy_engine == CopyEngine::threads && m.offloaded_bytes > 0)
    lines.push_back("copy threads: a host thread per direction waits for each transfer's data, then copies it "
                    "synchronously in the compute stream's order (Zhuang's CPU multithreading)");
  std::string parking;
  if (m.park_horizon == kParkUntilNeeded)
    parking = "the blocks they free stay parked until the pool needs the room, so forward reuses none of them "
              "while their copies run, and those still parked come back without a copy";
  else if (m.park_horizon > 0)
    parking = "up to " + std::to_string(m.park_horizon) +
              " blocks they free stay parked at once, so forward does not reuse them while their copies run";
  else if (m.pinned_bytes > 0 && s.transfer == TransferMode::async)
    parking = "the pool has no room to park the blocks they free: forward reuses them at once and waits for "
              "their copies";
  if (!parking.empty() && m.parking_pool_bytes)
    parking += "; with --budget " + exact_bytes_text(m.parking_pool_bytes) + " more are parked";
  if (!parking.empty()) lines.push_back("async offloads: " + parking);
  if (s.compress && m.pinned_bytes > 0) {
    if (m.pinned_bytes < m.uncompressed_pinned_bytes)
      lines.push_back("compressed offloads: pinned " + format_bytes(m.pinned_bytes) + " (two staging slots) instead of " +
                      format_bytes(m.uncompressed_pinned_bytes) +
                      "; the host keeps the offloaded tensors zero-value compressed in pageable memory, " +
                      std::to_string(compress_threads) + " thread" + (compress_threads == 1 ? "" : "s") +
                      " per tensor");
    else
      lines.push_back("compressed offloads: pinned " + format_bytes(m.pinned_bytes) +
                      " (two staging slots of the largest offloaded tensor), more than the " +
                      format_bytes(m.uncompressed_pinned_bytes) +
                      " this mode needs uncompressed: it offloads too little for compression to save pinned memory");
  }
  if (s.mode == OffloadMode::autoswap)
    lines.push_back(m.load_limit_bytes ? "autoswap: load limit " + format_bytes(m.load_limit_bytes) + ", offloads " +
                                             format_bytes(m.offloaded_bytes) + " per iteration"
                                       : std::string("autoswap: no load limit (no budget, or everything fits): "
                                                     "nothing offloaded"));
  return lines;
}

}  // namespace tidepool::app
