#include "engine/core/fusion.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tidepool {

Network fuse(Network net, Fusion fusion, bool sync_bn) {
  if (fusion == Fusion::none) return net;
  const std::string name = net.name();
  const Shape image = net.image_shape();
  const std::int64_t classes = net.classes();
  std::vector<Node> nodes = std::move(net).take_nodes();

  std::unordered_map<std::string, int> readers;
  for (const Node& n : nodes)
    for (const std::string& in : n.inputs) ++readers[in];

  // Kept nodes in order; a fused ReLU's output name -> the tensor that
  // replaces it (its producer's, now fused).
  std::vector<Node> kept;
  std::unordered_map<std::string, int> kept_index;
  std::unordered_map<std::string, std::string> renamed;
  for (Node& n : nodes) {
    // Readers are counted under the names the network was built with.
    const bool sole_reader = n.inputs.size() == 1 && readers[n.inputs[0]] == 1;
    for (std::string& in : n.inputs)
      if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
    if (n.layer->kind() == "relu" && sole_reader) {
      if (auto p = kept_index.find(n.inputs[0]); p != kept_index.end()) {
        const Layer& before = *kept[static_cast<std::size_t>(p->second)].layer;
        auto fused = sync_bn && before.kind() == "batchnorm" ? nullptr : before.with_relu();
        if (fused) {
          kept[static_cast<std::size_t>(p->second)].layer = std::move(fused);
          renamed.emplace(n.layer->name(), n.inputs[0]);
          continue;
        }
      }
    }
    kept_index.emplace(n.layer->name(), static_cast<int>(kept.size()));
    kept.push_back(std::move(n));
  }

  Network out(name, image, classes);
  for (Node& n : kept) out.add(std::move(n.layer), std::move(n.inputs));
  return out;
}

}  // namespace tidepool
