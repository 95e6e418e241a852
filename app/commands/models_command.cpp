#include "app/commands/models_command.h"

#include <iostream>

#include <cstdio>

#include "models/registry.h"

namespace tidepool::app {

void print_models(std::ostream& out) {
  char line[160];
  std::snprintf(line, sizeof line, "%-18s %-9s %14s %22s\n", "model", "input", "parameters",
                "activations/image");
  out << line;
  for (auto input : {models::InputKind::cifar, models::InputKind::imagenet})
    for (const std::string& name : models::model_names(input)) {
      const std::int64_t classes = input == models::InputKind::cifar ? 10 : 1000;
      const Network net = models::make_model(name, input, classes);
      // Layer outputs of one image's forward pass (what vDNN offloads); the
      // backward pass adds gradients of the same order on top.
      const double mib = static_cast<double>(net.activation_bytes_per_image()) / (1 << 20);
      std::snprintf(line, sizeof line, "%-18s %-9s %14lld %18.2f MiB\n", name.c_str(),
                    std::string(models::to_string(input)).c_str(),
                    static_cast<long long>(net.parameter_count()), mib);
      out << line;
    }
}

Command add_models_command(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("models", "list the models with parameter counts and activation memory");
  return {cmd, [](bool) {
            print_models(std::cout);
            return 0;
          }};
}

}  // namespace tidepool::app
