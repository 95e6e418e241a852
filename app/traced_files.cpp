#include "app/traced_files.h"

#include "ui/png/run_pictures.h"

namespace tidepool::app {

std::string ranked_file(const char* stem, const char* extension, int rank) {
  return std::string(stem) + (rank > 0 ? ".rank" + std::to_string(rank) : "") + extension;
}

void KeptEvents::send_to(EventSink& sink) const {
  for (const AnyEvent& e : events_) send_event(sink, e);
}

TracedFiles::TracedFiles(const std::filesystem::path& folder, TraceWindow window, int rank)
    : folder_(folder),
      rank_(rank),
      trace_((folder / ranked_file("trace", ".json", rank)).string()),
      load_csv_((folder / ranked_file("memory_load", ".csv", rank)).string()),
      events_((folder / ranked_file("events", ".bin", rank)).string()),
      filter_(files_, window.count, window.from) {
  files_.add(trace_);
  files_.add(load_csv_);
  files_.add(events_);
  files_.add(pictures_);
}

void TracedFiles::close(const MemorySummary& memory, std::int64_t batch, bool computes_values) {
  if (closed_) return;
  closed_ = true;
  filter_.flush();
  if (rank_ > 0) return;  // the pictures are rank 0's
  ui::write_run_pictures(pictures_.snapshot(), memory.pool_bytes, batch, folder_, memory.load_limit_bytes,
                         computes_values);
}

}  // namespace tidepool::app
