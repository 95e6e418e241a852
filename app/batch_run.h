// `tidepool --batch`: the epoch loop. Trains headless through a
// TrainingSession and reports to the run folder (app/run_record.h, which
// the window's session with --out writes through as well): a
// progress line per iteration; per epoch an evaluation, a metrics row and a
// checkpoint; checkpoints also at a stop (--stop-after) and within epochs
// (--checkpoint-every); the pictures when the traced iterations are done;
// at the end summary.json.
//
// Checkpoints within an epoch, by default one every 5 minutes of wall time:
// a kill loses at most that (and the iteration in flight), while a
// checkpoint costs one read of the state and one synced write of it
// (resnet50: 200 MB, about a second), under 1% of the time between two.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "app/checkpoint.h"
#include "engine/comm/communicator.h"
#include "engine/device/device.h"
#include "engine/perf/profile.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

// The settings of a resumed run: the checkpoint's, except what the command
// line gave explicitly (`given` holds long option names such as "epochs")
// and what is not the run's (the folder, the progress bar, --stop-after).
// Given memory settings that differ (offload mode, heuristic, budget,
// transfers: they never change the numbers) apply from the resumed run's
// first iteration, each said on stdout; any other given option that differs
// (model, dataset, batch, precision, seed, ...) is refused with a
// CheckpointError listing every one.
RunSettings resume_settings(const RunSettings& cli, const std::set<std::string>& given, const Checkpoint& saved,
                            const std::string& folder);

// Runs the training; returns summary.json's content, whose "status" is
// "done" or "stopped" (by --stop-after before the planned end). Throws an
// exception with a message for the user on bad input (unknown model,
// missing data, an --out folder that holds a run, ...); a refused start
// leaves the run folder as it was, and a later failure keeps what was
// written so far. Resuming a finished run changes nothing, says so and
// returns null; resuming with fewer iterations than were trained is
// refused. A run
// that diverges writes summary.json ("status": "diverged", "divergence":
// the message) and then throws the message.
// `tuned`: --tune's decision (app/commands/tune_command.h), kept in summary.json.
// `comm`: the ranks of a data-parallel run (app/ranks.h), every one of
// which calls run_batch; rank 0 writes the run folder's shared files.
// `measured`: --tune's measured profile (TunedRun::measured), planned with
// and written as the run folder's profile.json.
// `make_device`: SessionOptions::make_device (a test's device).
nlohmann::json run_batch(const RunSettings& settings, const std::optional<Checkpoint>& resume,
                         const nlohmann::json& tuned = nullptr, Communicator* comm = nullptr,
                         const Profile* measured = nullptr,
                         const std::function<std::unique_ptr<Device>()>& make_device = {});

}  // namespace tidepool::app
