// Writes the memory-load curve of a run as CSV, one row per LoadSample:
//
//   iteration,step,time_us,load_bytes,extent_bytes
//
// the form the paper figures are plotted from (load and pool extent after
// every step). Rows are streamed to the file as they arrive; flush() closes
// it and the destructor does so if flush() was not called. Samples that
// arrive after flush() are ignored. Calls may come from any thread.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include "engine/observe/events.h"

namespace tidepool {

class MemoryLoadCsvWriter final : public EventSink {
 public:
  // Opens (truncates) `path` and writes the header. Throws
  // std::runtime_error naming the path if it cannot be opened.
  explicit MemoryLoadCsvWriter(std::string path);
  // Closes the file if flush() was not called; never throws.
  ~MemoryLoadCsvWriter() override;
  MemoryLoadCsvWriter(const MemoryLoadCsvWriter&) = delete;
  MemoryLoadCsvWriter& operator=(const MemoryLoadCsvWriter&) = delete;

  void on_load(const LoadSample&) override;
  // Closes the file. Throws std::runtime_error naming the path if anything
  // could not be written.
  void flush() override;

  const std::string& path() const { return path_; }

  static constexpr const char* kHeader = "iteration,step,time_us,load_bytes,extent_bytes";

 private:
  void close();

  const std::string path_;
  std::mutex mutex_;
  std::ofstream out_;
  bool closed_ = false;
};

}  // namespace tidepool
