// The kernel choices a machine's GPU made by timing (Device::kernel_choices,
// the cuda device's `p` convolution algorithms), kept across runs:
//
//   $XDG_CACHE_HOME/tidepool/kernel-choices/<GPU name>.txt  (else ~/.cache/...)
//
// one line per choice. A run adopts the file's lines before it plans and
// adds the choices it made, so every later run on that machine computes
// with the same algorithms: the same seed gives the same bits in every
// offload mode and every process, although timing alone would decide near
// ties differently from run to run (measured on an H100: 1 of resnet18's
// 32 timed shapes changed its algorithm between two processes). A
// checkpoint's choices (app/checkpoint.h) come after the file's and win.
// Delete the file to time everything again (a new cuDNN, say); a line whose
// algorithm is no longer available is passed over and timed again.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tidepool::app {

// The file for a device called `device_name` ("cuda:0 (NVIDIA H100 80GB
// HBM3)": the GPU's name in parentheses; the ordinal does not matter),
// under `cache_home` (empty: $XDG_CACHE_HOME, else $HOME/.cache; no file
// when neither is set).
std::filesystem::path kernel_choices_file(const std::string& device_name, std::filesystem::path cache_home = {});

// The file's lines; none when it does not exist or cannot be read.
std::vector<std::string> read_kernel_choices(const std::filesystem::path& file);

// Adds `lines` to the file's (a line for a shape already there replaces
// it), written to a temporary file and renamed over the old one, so that
// runs starting at the same moment read a whole file. Failing to write
// only warns on stderr: the run goes on without remembering.
void remember_kernel_choices(const std::filesystem::path& file, const std::vector<std::string>& lines);

}  // namespace tidepool::app
