#include "engine/observe/sinks/memory_load_csv_writer.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tidepool {

MemoryLoadCsvWriter::MemoryLoadCsvWriter(std::string path) : path_(std::move(path)) {
  out_.open(path_, std::ios::out | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot open memory-load CSV '" + path_ + "' for writing: " +
                             std::strerror(errno));
  }
  out_ << kHeader << '\n';
}

MemoryLoadCsvWriter::~MemoryLoadCsvWriter() {
  try {
    std::lock_guard lock(mutex_);
    close();
  } catch (...) {
    // A destructor must not throw; flush() reports write errors.
  }
}

void MemoryLoadCsvWriter::on_load(const LoadSample& e) {
  // Nanosecond resolution is all the device clock has; fixed notation keeps
  // spreadsheet tools from reading large times in exponent form.
  char row[160];
  std::snprintf(row, sizeof row, "%" PRId64 ",%d,%.3f,%zu,%zu\n", e.iteration, e.step, e.time_us,
                e.load_bytes, e.extent_bytes);
  std::lock_guard lock(mutex_);
  if (!closed_) out_ << row;
}

void MemoryLoadCsvWriter::flush() {
  std::lock_guard lock(mutex_);
  close();
}

void MemoryLoadCsvWriter::close() {
  if (closed_) return;
  closed_ = true;
  out_.close();
  if (out_.fail()) {
    throw std::runtime_error("could not write memory-load CSV '" + path_ +
                             "' (disk full or file removed?)");
  }
}

}  // namespace tidepool
