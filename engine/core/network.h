// A network is a DAG of layers over named tensors. Two tensors exist before
// any layer: "data" (images, [N, C, H, W]) and "labels" ([N], i32). Each
// layer writes one tensor named after the layer. Layers are added in a
// topological order (every input already exists), which is also the order
// the forward pass runs in. A tensor read by several layers (fan-out) gets
// the sum of their gradients.
//
//   Network net("tiny", {3, 32, 32}, 10);
//   auto x = net.add(std::make_unique<Conv2d>("conv1", Conv2dOptions{.out_channels = 16}), {"data"});
//   x = net.add(std::make_unique<Relu>("relu1"), {x});
//   ...
//   net.add(std::make_unique<SoftmaxCrossEntropy>("loss"), {logits, "labels"});
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/core/layer.h"

namespace tidepool {

inline constexpr const char* kDataTensor = "data";
inline constexpr const char* kLabelsTensor = "labels";

struct Node {
  std::unique_ptr<Layer> layer;
  std::vector<std::string> inputs;
};

// Shapes of every tensor for one batch size.
struct NetworkShapes {
  std::vector<std::vector<Shape>> node_inputs;  // per node, per input
  std::vector<Shape> node_outputs;              // per node
};

class Network {
 public:
  Network(std::string name, Shape image_chw, std::int64_t classes);
  Network(Network&&) = default;
  Network& operator=(Network&&) = default;

  // Appends a layer reading `inputs`; returns the name of its output. Throws
  // std::invalid_argument for an unknown input or a duplicate name.
  std::string add(std::unique_ptr<Layer> layer, std::vector<std::string> inputs);

  const std::string& name() const { return name_; }
  const Shape& image_shape() const { return image_chw_; }  // C, H, W
  std::int64_t classes() const { return classes_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // Hands the nodes over, for a rewrite that builds a new network from
  // them (engine/core/fusion.h); this network is left empty.
  std::vector<Node> take_nodes() &&;

  // Index of the node producing `tensor`, -1 for data/labels, throws if unknown.
  int producer(const std::string& tensor) const;
  // The last node must be the loss: a node whose output nobody reads.
  int loss_node() const;

  // Infers every shape for a batch size (throws std::invalid_argument with
  // the layer's name when something does not fit).
  NetworkShapes shapes(std::int64_t batch) const;

  // Trainable parameter count (batchnorm running statistics excluded, as
  // PyTorch counts), and bytes of layer outputs per image.
  std::int64_t parameter_count() const;
  std::int64_t activation_bytes_per_image() const;

 private:
  std::string name_;
  Shape image_chw_;
  std::int64_t classes_;
  std::vector<Node> nodes_;
  std::unordered_map<std::string, int> index_;  // tensor name -> producing node
};

}  // namespace tidepool
