// Every option of a training run, declared once: its name, the setting it
// fills, its default (RunSettings'), its help, its range and what a resumed
// run does with it. The commands embed the groups they need, so an option
// has the same name, default and meaning wherever it appears:
//
//   a run (--batch or the window)  every group
//   plan                           every group: a run's command line after
//                                  `tidepool plan` plans that run
//   tune                           network, device, memory, batch_and_lr
//   profile                        network, device, batch, algo
//
// For `plan` the memory choices also take lists (`--heuristic
// best-fit,cnmem`): each one given filters the table to its values, each
// left out is enumerated (app/commands/plan_command.h).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "engine/run/run_settings.h"

namespace tidepool::app {

// What a resumed run does with an option given again (app/batch_run.h).
enum class OnResume : std::uint8_t {
  must_match,  // it changes the numbers: another value than the run's is refused
  may_change,  // memory, transfers and throttles never change the numbers: the new value applies
  invocation,  // it belongs to one invocation (the folder, the run's length, stops, checkpoints)
};

struct RunOption {
  std::string name;          // the long name, without "--"
  std::string settings_key;  // its key in to_json(RunSettings)
  OnResume on_resume;
  bool run_folder = false;   // of the run folder group: for runs that write one (--batch, the window with --out)
};

// The memory settings a plan enumerates, each as given on the command line
// (empty: not given, so every value is planned).
struct PlanLists {
  std::vector<OffloadMode> modes;
  std::vector<ConvScheme> schemes;
  std::vector<AllocOrder> orders;
  std::vector<std::string> heuristics;
  std::vector<Precision> precisions;
};

class RunOptions {
 public:
  // Options land in `s`; with `lists` (plan), the memory choices also take lists.
  RunOptions(CLI::App& cmd, RunSettings& s, PlanLists* lists = nullptr) : cmd_(cmd), s_(s), lists_(lists) {}

  void network();       // --model --fuse --dataset --sync-bn
  void data();          // --data
  void schedule();      // batch_and_lr(), --epochs --iterations --lr-schedule --momentum --weight-decay --seed
  void batch_and_lr();  // batch() and --lr
  void batch(const std::string& help = "images per iteration");  // --batch-size
  void device();        // --device --profile --link-gbps
  void memory();        // algo(), --heuristic --precision --mode --swap-score --transfer --order --lookahead
                        // --compress --compress-threads --budget --bucket-size --host-memory --copy-engine
  void algo(const std::string& help = "conv algorithm scheme");  // --algo
  void folder();        // --out --resume --force --trace-iterations --stop-after --checkpoint-every
  void all() { network(), data(), schedule(), device(), memory(), folder(); }

  // The options on the command line that was parsed, in declaration order.
  std::vector<RunOption> given() const;
  // Every option declared here.
  const std::vector<std::pair<CLI::Option*, RunOption>>& declared() const { return declared_; }

 private:
  CLI::Option* keep(CLI::Option* o, std::string settings_key, OnResume on_resume, const char* group);
  CLI::App& cmd_;
  RunSettings& s_;
  PlanLists* lists_;
  std::vector<std::pair<CLI::Option*, RunOption>> declared_;
};

// Every run option, as the groups declare them.
const std::vector<RunOption>& run_option_table();

// The run option of this long name ("mode", "bucket-size"); nullptr for a
// name that is not a run option.
const RunOption* find_run_option(const std::string& name);

// The options that change the numbers (OnResume::must_match) whose values
// differ between `was` and `is`, each as "--algo m (was p)".
std::vector<std::string> changes_the_numbers(const RunSettings& was, const RunSettings& is);

}  // namespace tidepool::app
