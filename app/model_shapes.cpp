#include "app/model_shapes.h"

#include <stdexcept>

namespace tidepool::app {

models::InputKind input_for_dataset(const std::string& dataset) {
  return dataset == "imagenet" || dataset == "imagenet-shapes" ? models::InputKind::imagenet : models::InputKind::cifar;
}

Network model_for_dataset(const std::string& model, const std::string& dataset, Fusion fusion, bool sync_bn) {
  std::int64_t classes = 0;
  if (dataset == "cifar10" || dataset == "generated" || dataset == "fashion-mnist") classes = 10;
  else if (dataset == "cifar100") classes = 100;
  else if (dataset == "imagenet" || dataset == "imagenet-shapes") classes = 1000;
  else
    throw std::invalid_argument("unknown dataset '" + dataset +
                                "' (valid here: cifar10, cifar100, fashion-mnist, generated, imagenet, "
                                "imagenet-shapes)");
  return fuse(models::make_model(model, input_for_dataset(dataset), classes), fusion, sync_bn);
}

}  // namespace tidepool::app
