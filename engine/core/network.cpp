#include "engine/core/network.h"

#include <stdexcept>

namespace tidepool {

Network::Network(std::string name, Shape image_chw, std::int64_t classes)
    : name_(std::move(name)), image_chw_(std::move(image_chw)), classes_(classes) {
  if (image_chw_.rank() != 3) throw std::invalid_argument("image shape must be [C, H, W]");
  if (classes_ <= 0) throw std::invalid_argument("a network needs at least one class");
}

int Network::producer(const std::string& tensor) const {
  if (tensor == kDataTensor || tensor == kLabelsTensor) return -1;
  if (auto it = index_.find(tensor); it != index_.end()) return it->second;
  throw std::invalid_argument("network '" + name_ + "': no tensor named '" + tensor + "'");
}

std::string Network::add(std::unique_ptr<Layer> layer, std::vector<std::string> inputs) {
  const std::string& name = layer->name();
  if (name == kDataTensor || name == kLabelsTensor)
    throw std::invalid_argument("network '" + name_ + "': '" + name + "' is a reserved name");
  if (index_.count(name))
      throw std::invalid_argument("network '" + name_ + "': duplicate layer name '" + name + "'");
  for (const auto& in : inputs) producer(in);  // throws for unknown inputs
  index_.emplace(name, static_cast<int>(nodes_.size()));
  nodes_.push_back({std::move(layer), std::move(inputs)});
  return name;
}

std::vector<Node> Network::take_nodes() && {
  index_.clear();
  return std::move(nodes_);
}

int Network::loss_node() const {
  if (nodes_.empty()) throw std::invalid_argument("network '" + name_ + "' has no layers");
  const int last = static_cast<int>(nodes_.size()) - 1;
  for (const auto& n : nodes_)
    for (const auto& in : n.inputs)
      if (in == nodes_[last].layer->name())
        throw std::invalid_argument("network '" + name_ + "': the last layer must be the loss");
  return last;
}

NetworkShapes Network::shapes(std::int64_t batch) const {
  if (batch <= 0) throw std::invalid_argument("batch size must be positive");
  NetworkShapes s;
  auto shape_of = [&](const std::string& t) -> Shape {
    if (t == kDataTensor)
      return Shape{batch, image_chw_[0], image_chw_[1], image_chw_[2]};
    if (t == kLabelsTensor) return Shape{batch};
    return s.node_outputs[producer(t)];
  };
  for (const auto& n : nodes_) {
    std::vector<Shape> in;
    for (const auto& t : n.inputs) in.push_back(shape_of(t));
    s.node_outputs.push_back(n.layer->infer(in));
    s.node_inputs.push_back(std::move(in));
  }
  return s;
}

std::int64_t Network::parameter_count() const {
  const NetworkShapes s = shapes(1);
  std::int64_t count = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    for (const auto& p : nodes_[i].layer->params(s.node_inputs[i]))
      if (p.trainable) count += p.shape.numel();
  return count;
}

std::int64_t Network::activation_bytes_per_image() const {
  const NetworkShapes s = shapes(1);
  std::int64_t bytes = 0;
  for (const auto& out : s.node_outputs) bytes += out.numel() * 4;
  return bytes;
}

}  // namespace tidepool
