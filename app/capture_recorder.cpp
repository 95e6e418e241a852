#include "app/capture_recorder.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <system_error>

#include "engine/core/json_file.h"

namespace fs = std::filesystem;

namespace tidepool::app {

fs::path capture_folder(const fs::path& run, std::int64_t from, std::int64_t count) {
  return run / "captures" / (std::to_string(from + 1) + "-" + std::to_string(from + count));
}

fs::path CaptureRecorder::start(std::int64_t from, std::int64_t count) {
  if (files_)
    throw std::invalid_argument("iterations " + std::to_string(window_.from + 1) + "-" +
                                std::to_string(window_.end()) + " are being recorded; wait for them to finish");
  if (count < 1) throw std::invalid_argument("record at least one iteration, not " + std::to_string(count));
  const fs::path folder = capture_folder(run_, from, count);
  std::error_code ec;
  if (fs::exists(folder, ec))
    throw std::invalid_argument(folder.string() + " exists already, and a capture never overwrites one");
  fs::create_directories(folder);
  window_ = {from, count};
  folder_ = folder;
  files_ = std::make_unique<TracedFiles>(folder, window_, 0);
  set_up_.send_to(files_->sink());
  return folder;
}

std::optional<fs::path> CaptureRecorder::finish(const MemorySummary& memory, std::int64_t batch,
                                                bool computes_values, nlohmann::json summary) {
  if (!files_) return std::nullopt;
  files_->close(memory, batch, computes_values);
  files_.reset();
  const std::int64_t trained = summary.value("iterations", window_.end());
  summary["status"] = "captured";
  summary["capture"] = {{"run", run_.string()},
                        {"first_iteration", window_.from + 1},
                        {"last_iteration", std::min(window_.end(), trained)}};
  write_json_atomically((folder_ / "summary.json").string(), summary);
  return folder_;
}

}  // namespace tidepool::app
