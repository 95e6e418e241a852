#include "models/registry.h"

#include <array>
#include <stdexcept>

#include "models/alexnet.h"
#include "models/mobilenet.h"
#include "models/resnet.h"
#include "models/vdnn.h"
#include "models/vgg.h"

namespace tidepool::models {
namespace {

// Captureless lambdas below, so a plain function pointer does.
using Factory = Network (*)(InputKind, std::int64_t);

struct Entry {
  std::string_view name;
  bool cifar;
  bool imagenet;
  Factory make;
};

// The order is the order model_names() lists them in: families as the zoo
// documents them, small networks first within a family. resnet44 is not a
// headline model but is one of He et al.'s CIFAR depths and costs one line.
constexpr std::array<Entry, 19> kModels = {{
    {"resnet20", true, false, [](InputKind, std::int64_t c) { return cifar_resnet(20, c); }},
    {"resnet32", true, false, [](InputKind, std::int64_t c) { return cifar_resnet(32, c); }},
    {"resnet44", true, false, [](InputKind, std::int64_t c) { return cifar_resnet(44, c); }},
    {"resnet56", true, false, [](InputKind, std::int64_t c) { return cifar_resnet(56, c); }},
    {"resnet110", true, false, [](InputKind, std::int64_t c) { return cifar_resnet(110, c); }},
    {"resnet18", true, true, [](InputKind in, std::int64_t c) { return resnet(18, in, c); }},
    {"resnet34", true, true, [](InputKind in, std::int64_t c) { return resnet(34, in, c); }},
    {"resnet50", true, true, [](InputKind in, std::int64_t c) { return resnet(50, in, c); }},
    {"resnet101", true, true, [](InputKind in, std::int64_t c) { return resnet(101, in, c); }},
    {"resnet152", true, true, [](InputKind in, std::int64_t c) { return resnet(152, in, c); }},
    {"vgg11", true, true, [](InputKind in, std::int64_t c) { return vgg(11, in, c); }},
    {"vgg13", true, true, [](InputKind in, std::int64_t c) { return vgg(13, in, c); }},
    {"vgg16", true, true, [](InputKind in, std::int64_t c) { return vgg(16, in, c); }},
    {"vgg19", true, true, [](InputKind in, std::int64_t c) { return vgg(19, in, c); }},
    {"vgg116", false, true, [](InputKind, std::int64_t c) { return deep_vgg(20, c); }},
    {"vgg191", false, true, [](InputKind, std::int64_t c) { return deep_vgg(35, c); }},
    {"mobilenet", true, true, [](InputKind in, std::int64_t c) { return mobilenet_v1(in, c); }},
    {"alexnet", true, true, [](InputKind in, std::int64_t c) { return alexnet(in, c); }},
    {"vdnn_constructed", true, true,
     [](InputKind in, std::int64_t c) { return vdnn_constructed(in, c); }},
}};

const Entry* find(std::string_view name) {
  for (const Entry& e : kModels)
    if (e.name == name) return &e;
  return nullptr;
}

bool has(const Entry& e, InputKind input) {
  return input == InputKind::cifar ? e.cifar : e.imagenet;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string_view to_string(InputKind input) {
  switch (input) {
    case InputKind::cifar: return "cifar";
    case InputKind::imagenet: return "imagenet";
  }
  throw std::invalid_argument("unknown InputKind value");
}

InputKind parse_input_kind(std::string_view text) {
  if (text == "cifar") return InputKind::cifar;
  if (text == "imagenet") return InputKind::imagenet;
  throw std::invalid_argument("unknown input kind '" + std::string(text) +
                              "'; valid input kinds: cifar, imagenet");
}

Shape image_shape(InputKind input) {
  return input == InputKind::cifar ? Shape{3, 32, 32} : Shape{3, 224, 224};
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const Entry& e : kModels) names.emplace_back(e.name);
  return names;
}

std::vector<std::string> model_names(InputKind input) {
  std::vector<std::string> names;
  for (const Entry& e : kModels)
    if (has(e, input)) names.emplace_back(e.name);
  return names;
}

bool supports(std::string_view name, InputKind input) {
  const Entry* e = find(name);
  return e != nullptr && has(*e, input);
}

Network make_model(std::string_view name, InputKind input, std::int64_t classes) {
  const Entry* e = find(name);
  if (e == nullptr)
    throw std::invalid_argument("unknown model '" + std::string(name) +
                                "'; valid models: " + joined(model_names()));
  if (!has(*e, input))
    throw std::invalid_argument("model '" + std::string(name) + "' has no " +
                                std::string(to_string(input)) + " variant; it is built for " +
                                std::string(e->cifar ? "cifar" : "imagenet") + " input only");
  if (classes <= 0)
    throw std::invalid_argument("model '" + std::string(name) +
                                "': classes must be positive, not " + std::to_string(classes));
  return e->make(input, classes);
}

}  // namespace tidepool::models
