// Writes every event it receives to an events file (engine/observe/event_file.h
// has the format): what `tidepool view` opens to show a finished run in the
// window.
//
// Records are streamed to the file as events arrive; only the string table
// (name → id) is kept in memory. flush() writes the end record with the
// counts and the checksum and closes the file. The destructor closes a file
// that was not flushed without an end record, on purpose: the run did not
// finish, and the reader says so instead of showing a part as the whole.
// Events that arrive after flush() are ignored.
//
// Calls may come from any thread; a mutex serialises them.
#pragma once

#include <cstdint>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/fnv1a.h"
#include "engine/observe/event_file.h"
#include "engine/observe/event_records.h"
#include "engine/observe/events.h"

namespace tidepool {

class EventFileWriter final : public EventSink {
 public:
  // Opens (truncates) `path` and writes the header. Throws
  // std::runtime_error naming the path if it cannot be opened.
  explicit EventFileWriter(std::string path);
  // Closes the file, without the end record, if flush() was not called;
  // never throws.
  ~EventFileWriter() override;
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void on_span(const SpanEvent&) override;
  void on_alloc(const AllocEvent&) override;
  void on_load(const LoadSample&) override;
  void on_iteration(const IterationSummary&) override;
  // Writes the end record and closes the file. Throws std::runtime_error
  // naming the path if anything could not be written (e.g. the disk is full).
  void flush() override;

  const std::string& path() const { return path_; }

 private:
  // Encodes the event and writes its records (under the lock).
  template <typename Event>
  void record(const Event& e);
  // Writes bytes to the file and adds them to the checksum.
  void write(const unsigned char* bytes, std::size_t n);

  const std::string path_;
  std::mutex mutex_;
  std::ofstream out_;
  bool closed_ = false;
  EventEncoder encoder_;
  std::vector<unsigned char> scratch_;  // one event's records
  std::uint64_t checksum_ = kFnv1aStart;
};

}  // namespace tidepool
