#include "app/model_shapes.h"

#include <stdexcept>

#include "models/registry.h"

namespace tidepool::app {

Network model_for_dataset(const std::string& model, const std::string& dataset) {
  std::int64_t classes = 0;
  models::InputKind input = models::InputKind::cifar;
  if (dataset == "cifar10" || dataset == "generated" || dataset == "fashion-mnist") classes = 10;
  else if (dataset == "cifar100") classes = 100;
  else if (dataset == "imagenet") classes = 1000, input = models::InputKind::imagenet;
  else throw std::invalid_argument("unknown dataset '" + dataset + "' (valid here: cifar10, cifar100, fashion-mnist, generated, imagenet)");
  return models::make_model(model, input, classes);
}

}  // namespace tidepool::app
