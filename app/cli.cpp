#include "app/cli.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "app/commands/command.h"
#include "app/commands/diff_command.h"
#include "app/commands/export_command.h"
#include "app/commands/models_command.h"
#include "app/commands/plan_command.h"
#include "app/commands/profile_command.h"
#include "app/commands/replay_command.h"
#include "app/commands/train_command.h"
#include "app/commands/tune_command.h"
#include "app/commands/view_command.h"
#include "app/ranks.h"
#include "app/spelling.h"
#include "models/registry.h"

namespace tidepool::app {
namespace {

// What a word CLI11 did not expect was probably meant to be: an option of
// the command or its subcommands ("--modle"), or a subcommand ("veiw").
std::string misspelt(const CLI::App& cli, const std::string& word) {
  std::vector<std::string> candidates;
  if (word.rfind("-", 0) == 0) {
    auto add_options = [&](const CLI::App& app) {
      for (const CLI::Option* o : app.get_options())
        for (const std::string& name : o->get_lnames()) candidates.push_back("--" + name);
    };
    add_options(cli);
    for (const CLI::App* sub : cli.get_subcommands({})) add_options(*sub);
  } else {
    for (const CLI::App* sub : cli.get_subcommands({})) candidates.push_back(sub->get_name());
  }
  return closest(word, candidates);
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App cli{"Tidepool: train CNNs under a GPU memory budget and see what the memory does."};
  std::string models;
  for (const std::string& m : models::model_names()) models += (models.empty() ? "" : ", ") + m;
  cli.footer("models: " + models + "\nrun `tidepool models` for their sizes; README.md and docs/ for the details");
  bool quiet = false;
  cli.add_flag("--quiet", quiet, "no progress bar");
  // The top-level command trains; each subcommand is one file of app/commands/.
  const Command train = add_train_command(cli);
  const std::vector<Command> subcommands = {add_models_command(cli),  add_plan_command(cli),
                                            add_replay_command(cli),  add_profile_command(cli),
                                            add_tune_command(cli),    add_view_command(cli),
                                            add_diff_command(cli),    add_export_command(cli)};
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ValidationError& e) {  // a value out of range: the user's error like any other
    std::fprintf(stderr, "tidepool: error: %s\n", e.what());
    return 1;
  } catch (const CLI::ParseError& e) {
    // A malformed command line: CLI11's words, a guess at what was meant,
    // and status 2 as getopt and argparse tools give (--help: 0).
    if (cli.exit(e) == 0) return 0;
    for (const std::string& word : cli.remaining(true)) {  // with the subcommands' leftovers
      const std::string guess = misspelt(cli, word);
      if (!guess.empty()) std::fprintf(stderr, "tidepool: '%s': did you mean '%s'?\n", word.c_str(), guess.c_str());
    }
    return 2;
  } catch (const std::exception& e) {  // a bad value: a word outside its table ("--mode al")
    return report_failure(e, nullptr);
  }
  try {
    for (const Command& c : subcommands)
      if (*c.cmd) {
        // A run's option before the subcommand would be the top-level
        // command's, and the subcommand would not see it.
        for (const CLI::Option* o : cli.get_options())
          if (o->count() > 0 && o->get_name() != "--quiet") {
            std::fprintf(stderr, "tidepool: %s before '%s' is not the subcommand's: put it after '%s'\n",
                         o->get_name().c_str(), c.cmd->get_name().c_str(), c.cmd->get_name().c_str());
            return 2;
          }
        return c.run(quiet);
      }
    return train.run(quiet);
  } catch (const std::exception& e) {
    return report_failure(e, nullptr);
  }
}

}  // namespace tidepool::app
