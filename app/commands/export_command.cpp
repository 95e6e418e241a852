#include "app/commands/export_command.h"

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "app/run_snapshot.h"
#include "engine/core/bytes_text.h"
#include "engine/core/file_bytes.h"
#include "engine/memory/snapshot/pickle_writer.h"
#include "engine/memory/snapshot/plain_data.h"

namespace fs = std::filesystem;

namespace tidepool::app {

int export_command(const ExportRequest& q, std::ostream& out) {
  // The user's file first: nothing is read, let alone written, over it.
  const std::string file = q.pytorch_snapshot.string();
  std::error_code ec;
  if (fs::is_directory(q.pytorch_snapshot, ec))
    throw std::runtime_error(file + " is a folder: --pytorch-snapshot names the file to write");
  if (fs::exists(q.pytorch_snapshot, ec) && !q.force)
    throw std::runtime_error(file + " exists; export does not overwrite a file: give another name, or --force to "
                             "replace it");

  const PyTorchSnapshot snapshot = run_snapshot(q.folder);
  const PlainData data = snapshot_data(snapshot);
  const bool json = q.pytorch_snapshot.extension() == ".json";
  const std::string bytes = json ? plain_data_json(data, file).dump() : write_pickle(data);
  write_file_atomically(file, bytes);

  std::size_t entries = 0;
  for (const auto& trace : snapshot.device_traces) entries += trace.size();
  out << "wrote " << file << " (" << (json ? "JSON" : "pickle, protocol 4") << ", " << format_bytes(bytes.size())
      << "): " << q.folder.string() << "'s traced iterations as a PyTorch memory snapshot, "
      << snapshot.device_traces.size() << " device" << (snapshot.device_traces.size() == 1 ? "" : "s") << ", "
      << entries << " trace entries, " << snapshot.stacks.size() << " tensors as frames\n"
      << "open it in PyTorch's memory viewer (https://pytorch.org/memory_viz), or replay it: tidepool replay " << file
      << '\n';
  return 0;
}

Command add_export_command(CLI::App& cli) {
  auto q = std::make_shared<ExportRequest>();
  auto* cmd = cli.add_subcommand(
      "export", "write a --batch run's traced iterations as a PyTorch memory snapshot, for PyTorch's memory viewer");
  cmd->add_option("folder", q->folder, "a run folder written by --batch (it holds events.bin)")->required();
  cmd->add_option("--pytorch-snapshot", q->pytorch_snapshot,
                  "the file to write: a pickle as torch.cuda.memory._dump_snapshot writes, or JSON when the name "
                  "ends in .json")
      ->required();
  cmd->add_flag("--force", q->force, "replace the file if it exists");
  return {cmd, [q](bool) { return export_command(*q, std::cout); }};
}

}  // namespace tidepool::app
