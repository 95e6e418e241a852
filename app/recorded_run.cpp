#include "app/recorded_run.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

#include "app/device_factory.h"
#include "app/memory_report.h"
#include "app/run_folder.h"
#include "engine/observe/event_file.h"

namespace fs = std::filesystem;

namespace tidepool::app {
namespace {

nlohmann::json read_summary(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(file.string() + " is not JSON: " + e.what());
  }
}

// An events file replayed into a ring that holds all of it.
std::unique_ptr<RingSink> replayed(const fs::path& events) {
  const EventFile file = traced_events(events);
  const EventFileCounts& n = file.counts();
  auto ring = std::make_unique<RingSink>(RingCapacities{.spans = static_cast<std::size_t>(n.spans),
                                                        .allocs = static_cast<std::size_t>(n.allocs),
                                                        .loads = static_cast<std::size_t>(n.loads),
                                                        .iterations = static_cast<std::size_t>(n.iterations)});
  file.replay(*ring);
  return ring;
}

}  // namespace

EventFile traced_events(const fs::path& events) {
  EventFile file(events);  // refuses a truncated or corrupt file with the reason
  if (file.counts().iterations == 0)
    throw std::runtime_error(events.string() +
                             " holds no traced iteration, so there is nothing to show (the run was trained with "
                             "--trace-iterations 0, or resumed past its traced iterations)");
  return file;
}

nlohmann::json read_run_summary(const fs::path& folder, bool with_events) {
  auto not_a_run = [&](const std::string& why) {
    throw std::runtime_error(folder.string() + " is not a Tidepool run folder: " + why);
  };
  std::error_code ec;
  if (!fs::exists(folder, ec)) not_a_run("it does not exist");
  if (!fs::is_directory(folder, ec)) not_a_run("it is a file, not a folder");
  const fs::path summary = folder / "summary.json";
  if (with_events && !fs::exists(folder / "events.bin", ec)) not_a_run("no events.bin (runs written by --batch have one)");
  if (!fs::exists(summary, ec))
    not_a_run("no summary.json (a --batch run writes it when it finishes: this one was stopped, or is still "
              "training)");
  nlohmann::json j = read_summary(summary);
  if (!j.is_object()) throw std::runtime_error(summary.string() + " is not a Tidepool run summary: not an object");
  return j;
}

ui::SessionStatus read_run_status(const fs::path& folder) {
  const nlohmann::json j = read_run_summary(folder, /*with_events=*/true);
  const fs::path summary = folder / "summary.json";
  try {
    return RecordedRun::status_from_summary(j);
  } catch (const std::exception& e) {  // a key missing or of another type, a word no table has
    throw std::runtime_error(summary.string() + " is not a Tidepool run summary: " + e.what());
  }
}

ui::SessionStatus RecordedRun::status_from_summary(const nlohmann::json& j) {
  ui::SessionStatus s;
  s.state = ui::RunState::recorded;
  s.settings = run_settings_from_json(j.at("settings"));
  s.dataset_name = s.settings.dataset;
  s.device = j.value("device", std::string(to_string(s.settings.device)));
  s.iteration = j.at("iterations").get<std::int64_t>();
  s.total_iterations = j.value("total_iterations", s.iteration);
  s.epochs = j.at("epochs").get<std::int64_t>();
  // The epoch of the last iteration trained (epochs are whole unless the
  // run was given --iterations, where this is the nearest).
  if (s.iteration > 0 && s.total_iterations > 0 && s.epochs > 0)
    s.epoch = std::min(s.epochs - 1, (s.iteration - 1) * s.epochs / s.total_iterations);
  s.memory = memory_from_json(j);
  s.link_adjustable = s.settings.device == DeviceKind::cpu;  // the cpu device simulated the link
  // A sim run's losses were zeros. Its plan's prediction is not in
  // summary.json: the Stats view shows what the iterations took only.
  s.computes_values = device_computes_values(s.settings.device);
  // null in a sim run's summary (no numbers), absent in an unfinished one's
  const auto accuracy = j.find("final_test_accuracy");
  s.test_accuracy = accuracy != j.end() && accuracy->is_number() ? accuracy->get<float>() : -1.0f;
  s.error = j.value("divergence", std::string());  // the Controls show it
  return s;
}

RecordedRun::RecordedRun(const fs::path& folder) : folder_(folder), status_(read_run_status(folder)) {
  ranks_.push_back({0, replayed(folder / "events.bin")});
  std::error_code ec;
  for (int r = 1; r < status_.settings.memory.ranks; ++r) {
    const fs::path other = folder / ranked_file("events", ".bin", r);
    if (fs::exists(other, ec)) ranks_.push_back({r, replayed(other)});
  }
}

std::vector<int> RecordedRun::event_ranks() const {
  std::vector<int> ranks;
  for (const RankEvents& r : ranks_) ranks.push_back(r.rank);
  return ranks;
}

const RingSink* RecordedRun::ring(int rank) const {
  for (const RankEvents& r : ranks_)
    if (r.rank == rank) return r.ring.get();
  return nullptr;
}

RingSnapshot RecordedRun::events(int rank) const {
  const RingSink* r = ring(rank);
  return r ? r->snapshot() : RingSnapshot{};
}

std::uint64_t RecordedRun::events_version(int rank) const {
  const RingSink* r = ring(rank);
  return r ? r->version() : 0;
}

}  // namespace tidepool::app
