#include "engine/observe/sinks/event_file_writer.h"

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace tidepool {

EventFileWriter::EventFileWriter(std::string path) : path_(std::move(path)) {
  out_.open(path_, std::ios::out | std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw std::runtime_error("cannot open events file '" + path_ + "' for writing: " + std::strerror(errno));
  }
  std::array<unsigned char, event_file::kHeaderBytes> header{};
  std::memcpy(header.data(), event_file::kMagic, sizeof event_file::kMagic);
  for (int i = 0; i < 4; ++i) header[8 + i] = static_cast<unsigned char>(event_file::kVersion >> (8 * i));
  write(header.data(), header.size());
}

EventFileWriter::~EventFileWriter() {
  try {
    std::lock_guard lock(mutex_);
    closed_ = true;
    out_.close();  // no end record: the run did not finish (see the header)
  } catch (...) {
    // A destructor must not throw; flush() reports write errors.
  }
}

void EventFileWriter::write(const unsigned char* bytes, std::size_t n) {
  out_.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(n));
  checksum_ = fnv1a(bytes, n, checksum_);
}

template <typename Event>
void EventFileWriter::record(const Event& e) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  scratch_.clear();
  encoder_.encode(e, scratch_);
  write(scratch_.data(), scratch_.size());
}

void EventFileWriter::on_span(const SpanEvent& e) { record(e); }
void EventFileWriter::on_alloc(const AllocEvent& e) { record(e); }
void EventFileWriter::on_load(const LoadSample& e) { record(e); }
void EventFileWriter::on_iteration(const IterationSummary& e) { record(e); }

void EventFileWriter::flush() {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  closed_ = true;
  scratch_.clear();
  encoder_.encode_end(checksum_, scratch_);
  out_.write(reinterpret_cast<const char*>(scratch_.data()), static_cast<std::streamsize>(scratch_.size()));
  out_.close();
  if (out_.fail())
    throw std::runtime_error("could not write events file '" + path_ + "' (disk full or file removed?)");
}

}  // namespace tidepool
