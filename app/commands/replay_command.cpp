#include "app/commands/replay_command.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/options/values.h"
#include "app/run_snapshot.h"

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/allocators/pytorch.h"
#include "engine/memory/figures.h"
#include "engine/core/bytes_text.h"
#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"
#include "engine/memory/snapshot/snapshot_file.h"

namespace tidepool::app {

namespace {

struct Row {
  std::string name;
  std::size_t peak_load = 0, footprint = 0, free_at_peak = 0;
  bool searched_footprint = false;  // footprint is the searched pool (`*`)
  PoolSearch search;
  std::string violation;  // empty: the overlap check held
  TraceReplay in_budget;  // the replay in --budget's pool, when one is given
};

Row measure(const AllocTrace& trace, const std::string& name, const AllocatorFactory& make, std::size_t unbounded,
            std::size_t budget) {
  Row row;
  row.name = name;
  try {
    if (budget) row.in_budget = replay(trace, *make(budget));
    auto allocator = make(unbounded);
    const TraceReplay open = replay(trace, *allocator);
    row.search = search_pool_size(trace, make);
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

// What is replayed: the trace of `q.file`, a CSV, a PyTorch snapshot or a
// run folder, told by what it is (a folder is a run); a snapshot's and a
// run's own figures beside it.
struct Input {
  std::string format;  // "csv", "pickle", "json" (format_name) or "run"
  AllocTrace trace;
  std::optional<SnapshotTrace> snapshot;  // a snapshot's, or a run's as its export would hold it
};

Input read_input(const ReplayRequest& q) {
  Input in;
  std::error_code ec;
  if (std::filesystem::is_directory(q.file, ec)) {
    // The run's events as the snapshot `tidepool export` writes, through
    // the same snapshot_trace: a run and its export replay as one trace.
    in.format = "run";
    in.snapshot = snapshot_trace(run_snapshot(q.file), q.file, q.device_index);
    in.trace = in.snapshot->trace;
    return in;
  }
  std::string bytes = read_file_bytes(q.file, "trace file");
  const TraceFileFormat format = trace_file_format(bytes);
  in.format = format_name(format);
  if (format == TraceFileFormat::csv) {
    if (q.device_index)
      throw std::invalid_argument(q.file + ": --device-index picks a device of a PyTorch snapshot; this is a CSV trace");
    std::istringstream text(bytes);
    in.trace = read_trace(text, q.file);
    return in;
  }
  in.snapshot = read_snapshot_trace(std::move(bytes), q.file, q.device_index);
  in.trace = in.snapshot->trace;
  return in;
}

void print_snapshot_figures(const SnapshotTrace& s, std::ostream& out) {
  out << "PyTorch's allocator in the trace: peak reserved " << format_bytes(s.peak_reserved) << " ("
      << s.peak_reserved << " B; " << format_bytes(s.reserved_at_start) << " at the trace's start, "
      << s.reserved.size() << " segment events), peak requested " << format_bytes(s.peak_requested) << " ("
      << s.peak_requested << " B)\n";
  if (s.ooms.empty()) out << "no out-of-memory in the trace\n";
  for (const SnapshotOom& o : s.ooms)
    out << "out of memory at device_traces[" << s.device << "][" << o.entry << "] (after event " << o.trace_events
        << " of the trace): asked " << format_bytes(o.bytes) << " (" << o.bytes << " B) on stream " << o.stream << " with "
        << format_bytes(o.device_free) << " free on the device\n";
}

nlohmann::json row_json(const Row& r, std::size_t budget) {
  nlohmann::json j = {{"heuristic", r.name}};
  if (!r.violation.empty()) {
    j["overlap"] = "violated";
    j["violation"] = r.violation;
    return j;
  }
  j["peak_load_bytes"] = r.peak_load;
  j["footprint_bytes"] = r.footprint;
  j["footprint_is_searched_pool"] = r.searched_footprint;
  j["competitive_ratio"] = competitive_ratio(r.footprint, r.peak_load);
  j["largest_free_at_peak_bytes"] = r.free_at_peak;
  j["pool_search_bytes"] = r.search.pool_bytes;
  j["pool_search_restarts"] = r.search.restarts;
  if (budget) {
    j["fits_budget"] = r.in_budget.fits;
    if (!r.in_budget.fits) j["budget_failed_event"] = r.in_budget.failed_event;
  }
  j["overlap"] = "ok";
  return j;
}

nlohmann::json snapshot_json(const SnapshotTrace& s) {
  nlohmann::json ooms = nlohmann::json::array();
  for (const SnapshotOom& o : s.ooms)
    ooms.push_back({{"entry", o.entry}, {"trace_event", o.trace_events}, {"bytes", o.bytes}, {"stream", o.stream}, {"device_free_bytes", o.device_free}});
  return {{"device", s.device},
          {"devices", s.devices},
          {"entries", s.entries},
          {"live_at_start", s.live_at_start},
          {"streams", s.streams.size()},
          {"reserved_at_start_bytes", s.reserved_at_start},
          {"peak_reserved_bytes", s.peak_reserved},
          {"peak_requested_bytes", s.peak_requested},
          {"segment_events", s.reserved.size()},
          {"ooms", ooms}};
}

}  // namespace

int replay_command(const ReplayRequest& q, std::ostream& out) {
  // Refused before the file is read: a mistyped option is the user's first error to fix.
  const PytorchAllocConf conf = parse_pytorch_alloc_conf(q.pytorch_alloc_conf);
  const Input input = read_input(q);
  const AllocTrace& trace = input.trace;
  const std::optional<SnapshotTrace>& snapshot = input.snapshot;
  std::size_t allocs = 0;
  for (const TraceEvent& e : trace) allocs += e.kind == TraceEvent::Kind::alloc;
  const std::size_t peak = peak_load_bytes(trace);
  const std::size_t unbounded = total_alloc_bytes(trace);

  std::vector<Row> rows;
  for (const std::string& name : allocator_names()) {
    // pytorch under the user's PYTORCH_CUDA_ALLOC_CONF; the registry's is PyTorch's defaults.
    const AllocatorFactory make = [&](std::size_t pool) {
      return name == "pytorch" ? make_pytorch_allocator(pool, conf) : make_allocator(name, pool);
    };
    rows.push_back(measure(trace, name, make, unbounded, q.budget_bytes));
  }
  int status = 0;
  for (const Row& r : rows)
    if (!r.violation.empty()) status = 1;

  if (q.json) {
    nlohmann::json j = {{"file", q.file},          {"format", input.format},
                        {"events", trace.size()},  {"allocs", allocs},
                        {"frees", trace.size() - allocs}, {"peak_load_bytes", peak},
                        {"heuristics", nlohmann::json::array()}};
    if (snapshot) j["snapshot"] = snapshot_json(*snapshot);
    if (q.budget_bytes) j["budget_bytes"] = q.budget_bytes;
    for (const Row& r : rows) j["heuristics"].push_back(row_json(r, q.budget_bytes));
    out << j.dump(2) << '\n';
    return status;
  }

  char line[256];
  if (input.format == "run") {
    const SnapshotTrace& s = *snapshot;
    out << "run " << q.file << ": rank " << s.device << " of " << s.devices << ", " << s.entries
        << " trace entries of its traced iterations: " << trace.size() << " events (" << allocs << " allocs, "
        << trace.size() - allocs << " frees), peak load " << format_bytes(peak) << " (" << peak << " B)\n"
        << "the run's own pool: " << format_bytes(s.peak_reserved) << " (" << s.peak_reserved << " B)\n";
  } else if (snapshot) {
    const SnapshotTrace& s = *snapshot;
    out << "snapshot " << q.file << " (" << input.format << "): device " << s.device << " of " << s.devices
        << ", " << s.entries << " trace entries: " << trace.size() << " events (" << allocs << " allocs, "
        << trace.size() - allocs << " frees), " << s.live_at_start << " of the allocs live at the trace's start, "
        << s.streams.size() << " stream" << (s.streams.size() == 1 ? "" : "s") << ", peak load " << format_bytes(peak)
        << " (" << peak << " B)\n";
    print_snapshot_figures(s, out);
  } else {
    out << "trace " << q.file << ": " << trace.size() << " events (" << allocs << " allocs, "
        << trace.size() - allocs << " frees), peak load " << format_bytes(peak) << " (" << peak << " B)\n";
  }
  std::snprintf(line, sizeof line, "%-10s %12s %13s %7s %13s %13s %9s  %s\n", "heuristic", "peak load",
                "footprint", "ratio", "free at peak", "pool search", "restarts", "overlap");
  out << line;

  bool any_searched = false;
  std::vector<std::string> violations;
  for (const Row& r : rows) {
    if (!r.violation.empty()) {
      std::snprintf(line, sizeof line, "%-10s %12s %13s %7s %13s %13s %9s  %s\n", r.name.c_str(), "-", "-", "-",
                    "-", "-", "-", "VIOLATED");
      out << line;
      violations.push_back(r.name + ": " + r.violation);
      continue;
    }
    const double ratio = competitive_ratio(r.footprint, r.peak_load);
    const std::string footprint = format_bytes(r.footprint) + (r.searched_footprint ? "*" : " ");
    any_searched |= r.searched_footprint;
    std::snprintf(line, sizeof line, "%-10s %12s %13s %7.4f %13s %13s %9d  %s\n", r.name.c_str(),
                  format_bytes(r.peak_load).c_str(), footprint.c_str(), ratio, format_bytes(r.free_at_peak).c_str(),
                  format_bytes(r.search.pool_bytes).c_str(), r.search.restarts, "ok");
    out << line;
  }
  if (q.budget_bytes) {
    out << "in a budget of " << format_bytes(q.budget_bytes) << ":";
    const char* sep = " ";
    for (const Row& r : rows) {
      if (!r.violation.empty()) continue;
      out << sep << r.name << " "
          << (r.in_budget.fits ? std::string("fits")
                               : "does not fit (event " + std::to_string(r.in_budget.failed_event) + ")");
      sep = ", ";
    }
    out << '\n';
  }
  if (any_searched)
    out << "* places blocks at the top of the pool, so its extent in an unbounded pool is the pool itself;\n"
           "  shown instead: the searched pool and the figures of the replay in it\n";
  out << "Notes: the exact row is the per-tensor ideal (footprint = peak load); its pool search measures\n"
         "the best-fit offsets it places with. A pool search gives a sufficient pool, not necessarily the\n"
         "smallest.\n";
  if (snapshot && input.format != "run")
    out << "A snapshot's blocks are its requested sizes, rounded up to 256 B as every heuristic rounds them; PyTorch's\n"
           "allocator rounds to 512 B and reserves whole segments, which its peak reserved counts.\n";
  for (const std::string& v : violations) out << "overlap check failed: " << v << '\n';
  return status;
}

void add_device_index_option(CLI::App& cmd, std::optional<int>& device_index) {
  cmd.add_option("--device-index", device_index,
                 "a snapshot's device (its device_traces index; a run folder's rank; default: the one with the most "
                 "events)")
      ->transform(number(0, 1023));
}

Command add_replay_command(CLI::App& cli) {
  auto q = std::make_shared<ReplayRequest>();
  auto* cmd = cli.add_subcommand(
      "replay", "run an allocation trace through every heuristic: Tidepool's CSV, a PyTorch memory snapshot "
                "(_dump_snapshot's pickle, or its JSON), told apart by content, or a --batch run folder's traced "
                "iterations");
  cmd->add_option("file", q->file,
                  "a CSV of alloc/free events, a PyTorch snapshot (format: docs/memory.md), or a run folder")
      ->required();
  add_device_index_option(*cmd, q->device_index);
  cmd->add_flag("--json", q->json, "one JSON object: the trace's figures and one object per heuristic");
  add_size(*cmd, "--budget", q->budget_bytes,
           "a pool to replay the trace in with every heuristic: whether each fits it, and where the first that "
           "does not fails (e.g. 900MiB)");
  cmd->add_option("--pytorch-alloc-conf", q->pytorch_alloc_conf,
                  "the pytorch row's PYTORCH_CUDA_ALLOC_CONF, in PyTorch's syntax "
                  "(e.g. max_split_size_mb:128,expandable_segments:True; default: PyTorch's defaults)");
  return {cmd, [q](bool) { return replay_command(*q, std::cout); }};
}

}  // namespace tidepool::app
