// `tidepool export RUN_DIR --pytorch-snapshot FILE`: writes a finished
// --batch run's traced iterations as a PyTorch memory snapshot, so that
// PyTorch's memory viewer (pytorch.org/memory_viz, or
// torch/cuda/_memory_viz.py) opens a Tidepool run as it opens
// torch.cuda.memory._dump_snapshot's files. How the run's pool events
// become the snapshot's segments and device_traces: app/run_snapshot.h.
//
// FILE is a pickle (protocol 4, plain data only: engine/memory/snapshot/
// pickle_writer.h), or, when its name ends in .json, the JSON that
// json.dump writes for the same structure. `tidepool replay FILE` reads
// either back to the trace `tidepool replay RUN_DIR` replays.
//
// Refused, with a message and status 1, before anything is written: a
// folder that is not a finished run, a run whose events.bin holds no traced
// iteration, and a FILE that exists, unless --force (then it is replaced;
// never a folder). The file is written whole or not at all (a temporary
// file renamed over it).
#pragma once

#include <filesystem>
#include <ostream>

#include "app/commands/command.h"

namespace tidepool::app {

struct ExportRequest {
  std::filesystem::path folder;
  std::filesystem::path pytorch_snapshot;  // the file to write
  bool force = false;                      // replace an existing file
};

// Returns 0 after printing what it wrote. Throws std::runtime_error for the
// refusals above.
int export_command(const ExportRequest& request, std::ostream& out);

// `tidepool export`.
Command add_export_command(CLI::App& cli);

}  // namespace tidepool::app
