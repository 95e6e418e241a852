#include "app/memory_report.h"

#include "engine/core/bytes_text.h"
#include "engine/memory/parking.h"

namespace tidepool::app {

std::vector<std::string> memory_lines(const MemorySummary& m, const MemorySettings& s, int compress_threads) {
  std::vector<std::string> lines;
  auto fact = [&](MemoryFact f) { return std::string(fact_info(f).label) + " " + fact_text(m, f); };
  lines.push_back("memory: " + fact(MemoryFact::pool) + ", " + fact(MemoryFact::peak_load) + ", " +
                  fact(MemoryFact::footprint) + ", " + fact(MemoryFact::minimum_pool) + " (" + s.heuristic + ", mode " +
                  to_string(s.mode) + ", algo " + to_string(s.scheme) + ", " + to_string(s.transfer) + ", " +
                  to_string(s.order) + "); " + fact(MemoryFact::pinned_host));
  // What the peak is made of; the parked blocks and holes are beside the
  // load, not in it (docs/memory.md#what-the-figures-mean).
  lines.push_back(std::string(fact_info(MemoryFact::peak_load_by_role).label) + ": " +
                  fact_text(m, MemoryFact::peak_load_by_role) + "; beside it, below the extent: " +
                  fact(MemoryFact::parked_at_peak) + ", " + fact(MemoryFact::holes_at_peak));
  if (s.host_memory == HostMemory::pageable && m.pageable_bytes > 0)
    lines.push_back("pageable offloads: " + format_bytes(m.pageable_bytes) + " of ordinary host memory, copied through " +
                    format_bytes(m.pinned_bytes) + " of pinned staging buffers");
  if (s.copy_engine == CopyEngine::threads && m.offloaded_bytes > 0)
    lines.push_back("copy threads: a host thread per direction waits for each transfer's data, then copies it "
                    "synchronously in the compute stream's order (Zhuang's CPU multithreading)");
  if (s.transfer == TransferMode::async && m.pinned_bytes > 0) {
    std::string parking = std::string("async offloads: ") + fact_info(MemoryFact::park_horizon).label + ": " +
                          fact_text(m, MemoryFact::park_horizon);
    if (m.park_horizon == kParkUntilNeeded)
      parking += ", until the pool needs the room: forward reuses none of them while their copies run, and those "
                 "still parked come back without a copy";
    else if (m.park_horizon > 0)
      parking += " at once: forward does not reuse them while their copies run";
    else
      parking += ": the pool has no room to park them, so forward reuses them at once and waits for their copies";
    if (m.parking_pool_bytes) parking += "; with --budget " + exact_bytes_text(m.parking_pool_bytes) + " more are parked";
    lines.push_back(parking);
  }
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
    lines.push_back(m.load_limit_bytes ? fact(MemoryFact::load_limit) + ", " + fact(MemoryFact::offloaded)
                                       : std::string("AutoSwap: no load limit (no budget, or everything fits): "
                                                     "nothing offloaded"));
  return lines;
}

}  // namespace tidepool::app
