#include "app/commands/replay_command.h"

#include <iostream>
#include <memory>

#include <cstdio>
#include <stdexcept>
#include <vector>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/figures.h"
#include "engine/core/bytes_text.h"
#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"

namespace tidepool::app {

namespace {

struct Row {
  std::string name;
  std::size_t peak_load = 0, footprint = 0, free_at_peak = 0;
  bool searched_footprint = false;  // footprint is the searched pool (`*`)
  PoolSearch search;
  std::string violation;  // empty: the overlap check held
};

Row measure(const AllocTrace& trace, const std::string& name, std::size_t unbounded) {
  Row row;
  row.name = name;
  try {
    auto allocator = make_allocator(name, unbounded);
    const TraceReplay open = replay(trace, *allocator);
    row.search = search_pool_size(trace, name);
    const bool at_top = !open.fits || open.figures.footprint_bytes >= unbounded;
    if (at_top && row.search.pool_bytes < unbounded) {
      // The extent of a pool-top placement measures the pool, not the
      // heuristic: report it at the pool it was found to need.
      row.searched_footprint = true;
      row.footprint = row.search.pool_bytes;
      row.peak_load = row.search.replay.figures.peak_load_bytes;
      row.free_at_peak = row.search.replay.figures.largest_free_at_peak.bytes;
    } else {
      row.footprint = open.figures.footprint_bytes;
      row.peak_load = open.figures.peak_load_bytes;
      row.free_at_peak = open.figures.largest_free_at_peak.bytes;
    }
  } catch (const std::invalid_argument&) {
    throw;  // a malformed trace (a logic_error too), which read_trace has already ruled out
  } catch (const std::logic_error& e) {
    row.violation = e.what();  // the replay loop's overlap check
  }
  return row;
}

}  // namespace

int replay_command(const std::string& file, std::ostream& out) {
  const AllocTrace trace = read_trace_file(file);
  std::size_t allocs = 0;
  for (const TraceEvent& e : trace) allocs += e.kind == TraceEvent::Kind::alloc;
  const std::size_t peak = peak_load_bytes(trace);
  const std::size_t unbounded = total_alloc_bytes(trace);

  char line[256];
  out << "trace " << file << ": " << trace.size() << " events (" << allocs << " allocs, "
      << trace.size() - allocs << " frees), peak load " << format_bytes(peak) << " (" << peak << " B)\n";
  std::snprintf(line, sizeof line, "%-10s %12s %13s %7s %13s %13s %9s  %s\n", "heuristic", "peak load",
                "footprint", "ratio", "free at peak", "pool search", "restarts", "overlap");
  out << line;

  int status = 0;
  bool any_searched = false;
  std::vector<std::string> violations;
  for (const std::string& name : allocator_names()) {
    const Row r = measure(trace, name, unbounded);
    if (!r.violation.empty()) {
      std::snprintf(line, sizeof line, "%-10s %12s %13s %7s %13s %13s %9s  %s\n", name.c_str(), "-", "-", "-",
                    "-", "-", "-", "VIOLATED");
      out << line;
      violations.push_back(name + ": " + r.violation);
      status = 1;
      continue;
    }
    const double ratio = competitive_ratio(r.footprint, r.peak_load);
    const std::string footprint = format_bytes(r.footprint) + (r.searched_footprint ? "*" : " ");
    any_searched |= r.searched_footprint;
    std::snprintf(line, sizeof line, "%-10s %12s %13s %7.4f %13s %13s %9d  %s\n", name.c_str(),
                  format_bytes(r.peak_load).c_str(), footprint.c_str(), ratio, format_bytes(r.free_at_peak).c_str(),
                  format_bytes(r.search.pool_bytes).c_str(), r.search.restarts, "ok");
    out << line;
  }
  if (any_searched)
    out << "* places blocks at the top of the pool, so its extent in an unbounded pool is the pool itself;\n"
           "  shown instead: the searched pool and the figures of the replay in it\n";
  out << "Notes: the exact row is the per-tensor ideal (footprint = peak load); its pool search measures\n"
         "the best-fit offsets it places with. A pool search gives a sufficient pool, not necessarily the\n"
         "smallest.\n";
  for (const std::string& v : violations) out << "overlap check failed: " << v << '\n';
  return status;
}

Command add_replay_command(CLI::App& cli) {
  auto file = std::make_shared<std::string>();
  auto* cmd = cli.add_subcommand("replay", "run an allocation trace (CSV) through every heuristic");
  cmd->add_option("file", *file, "CSV of alloc/free events (format: docs/memory.md)")->required();
  return {cmd, [file](bool) { return replay_command(*file, std::cout); }};
}

}  // namespace tidepool::app
