#include "engine/plan/planner.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/allocator.h"
#include "engine/memory/allocators/free_list.h"
#include "engine/step_calls/f32_views.h"

namespace tidepool {
namespace {

// Builds one schedule. Kept as a class so the steps read like the
// description in planner.h.
class Planner {
 public:
  Planner(const Network& net, std::int64_t batch, const PlanSettings& settings, const KernelQueries& k)
      : net_(net), loss_(net.loss_node()), k_(k), shapes_(net.shapes(batch)) {
    s_.batch = batch;
    s_.settings = settings;
    s_.channel_block = k.channel_block();
    s_.nodes.resize(net.nodes().size());
  }

  Schedule build() {
    add_persistent();
    add_transient_tensors();
    if (s_.settings.phase == Phase::train) {
      find_backward_nodes();
      plan_forward();
      plan_backward();
      plan_update();
    } else {
      plan_forward();
    }
    emit_free(s_.loss);
    predict_load();
    place_host_slots();
    return std::move(s_);
  }

 private:
  const std::vector<Node>& nodes() const { return net_.nodes(); }
  bool training() const { return s_.settings.phase == Phase::train; }

  int add_tensor(std::string name, Shape shape, Role role, int node, DType dtype = DType::f32,
                 bool persistent = false) {
    s_.tensors.push_back({TensorInfo{std::move(name), std::move(shape), dtype, role}, persistent, node});
    return static_cast<int>(s_.tensors.size()) - 1;
  }
  // Byte buffers are planned as f32 vectors of the rounded-up size.
  static Shape words(std::size_t bytes) { return Shape{static_cast<std::int64_t>((bytes + 3) / 4)}; }
  int add_bytes(std::string name, std::size_t bytes, Role role, int node) {
    return add_tensor(std::move(name), words(bytes), role, node);
  }

  void step(StepKind kind, int node = -1, int tensor = -1, int source = -1) {
    s_.steps.push_back({kind, Stream::compute, node, tensor, source});
  }
  void emit_alloc(int t, bool will_offload = false) {
    if (t < 0) return;
    s_.steps.push_back({StepKind::alloc, Stream::compute, -1, t, -1, will_offload});
    set_live(t, true);
  }
  void emit_free(int t) {
    if (t < 0) return;
    step(StepKind::free, -1, t);
    set_live(t, false);
  }
  // Which tensors the steps so far leave on the device (the recomputes ask).
  void set_live(int t, bool live) {
    if (live_.size() <= static_cast<std::size_t>(t)) live_.resize(static_cast<std::size_t>(t) + 1, false);
    live_[static_cast<std::size_t>(t)] = live;
  }
  bool live(int t) const { return static_cast<std::size_t>(t) < live_.size() && live_[static_cast<std::size_t>(t)]; }
  // An offloaded tensor's device block, after its last forward reader:
  // with async transfers its copy may still be running.
  void emit_free_offloaded(int t) {
    emit_free(t);
    s_.steps.back().after_copy = s_.settings.memory.transfer == TransferMode::async;
  }

  // Parameters first and in node order, so every schedule of this network
  // gives them the same ids (see Schedule::persistent).
  void add_persistent() {
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const Layer& layer = *nodes()[i].layer;
      NodeTensors& nt = s_.nodes[i];
      for (const ParamSpec& p : layer.params(shapes_.node_inputs[i])) {
        const std::string base = layer.name() + "." + p.suffix;
        const int node = static_cast<int>(i);
        nt.params.push_back(add_tensor(base, p.shape, Role::weight, node, DType::f32, true));
        if (p.trainable) {
          nt.param_grads.push_back(
              add_tensor(base + ".grad", p.shape, Role::weight_gradient, node, DType::f32, true));
          nt.momenta.push_back(
              add_tensor(base + ".momentum", p.shape, Role::optimizer_state, node, DType::f32, true));
        } else {
          nt.param_grads.push_back(-1);
          nt.momenta.push_back(-1);
        }
      }
    }
    for (int t = 0; t < static_cast<int>(s_.tensors.size()); ++t) {
      s_.persistent.push_back(t);
      s_.persistent_bytes += round_up(s_.tensors[t].info.bytes());
    }
  }

  void add_transient_tensors() {
    const std::int64_t batch = s_.batch;
    const Shape& img = net_.image_shape();
    s_.data = add_tensor(kDataTensor, Shape{batch, img[0], img[1], img[2]}, Role::input, -1);
    s_.labels = add_tensor(kLabelsTensor, Shape{batch}, Role::input, -1, DType::i32);
    const bool half = s_.settings.memory.precision != Precision::fp32;
    backward_layer_workspace_.assign(nodes().size(), 0);
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const Layer& layer = *nodes()[i].layer;
      const auto& in = shapes_.node_inputs[i];
      const int node = static_cast<int>(i);
      NodeTensors& nt = s_.nodes[i];
      for (const auto& name : nodes()[i].inputs) nt.inputs.push_back(tensor_of(name));
      // Activations in the run's precision; the loss stays f32 for the host.
      DType out = layer.output_dtype();
      if (out == DType::f32 && node != loss_) out = activation_dtype(s_.settings.memory.precision);
      nt.output = add_tensor(layer.name(), shapes_.node_outputs[i], Role::activation, node, out);
      for (const SavedSpec& sv : layer.saved(in, s_.channel_block, k_))
        nt.saved.push_back(add_bytes(layer.name() + "." + sv.suffix, sv.bytes, Role::activation, node));
      // The layer's workspace behind the f32 copies of its 16-bit tensors
      // (engine/step_calls/f32_views.h) and, with --sync-bn, its rank sums.
      if (s_.syncs_statistics()) {
        nt.forward_rank_sums = layer.rank_sums(in, Pass::forward);
        nt.backward_rank_sums = layer.rank_sums(in, Pass::backward);
      }
      // A 16-bit step computes on its tensors as they are where its kernels
      // take 16 bits, every activation it touches is 16-bit (not the first
      // convolution, which reads the f32 images) and it runs whole (the
      // --sync-bn halves take f32); otherwise it works on f32 copies.
      const DType stored = s_.tensors[nt.output].info.dtype;
      nt.computes_16bit = half && layer.has_16bit_kernels() && is_16bit(stored) && k_.takes_16bit(stored) &&
                          !nt.forward_rank_sums && !nt.backward_rank_sums;
      for (int t : nt.inputs) nt.computes_16bit = nt.computes_16bit && is_16bit(s_.tensors[t].info.dtype);
      const DType computes_in = nt.computes_16bit ? stored : DType::f32;
      const std::size_t fwd =
          layer.workspace_bytes(in, Pass::forward, s_.settings.memory.scheme, s_.channel_block, computes_in, k_) +
          f32_views(s_, layer, node, true).bytes + (nt.forward_rank_sums ? rank_sums_bytes(nt.forward_rank_sums) : 0);
      if (fwd) nt.forward_workspace = add_bytes(layer.name() + ".fwd_workspace", fwd, Role::workspace, node);
      if (training()) {
        // Sized once the gradients exist (plan_backward).
        const std::size_t bwd =
            layer.workspace_bytes(in, Pass::backward, s_.settings.memory.scheme, s_.channel_block, computes_in, k_) +
            (nt.backward_rank_sums ? rank_sums_bytes(nt.backward_rank_sums) : 0);
        backward_layer_workspace_[i] = bwd;
        if (bwd || (half && !nt.computes_16bit))
          nt.backward_workspace = add_bytes(layer.name() + ".bwd_workspace", bwd, Role::workspace, node);
      }
      nt.input_grads.assign(nt.inputs.size(), -1);
    }
    s_.loss = s_.nodes[loss_].output;
  }

  // fp16's loss scaling needs a flag for the update (Schedule::overflow),
  // alive only around it.
  void plan_update() {
    // Every bucket's sum is back before the update reads the gradients.
    for (std::size_t b = 0; b < s_.buckets.size(); ++b) {
      const int t = s_.buckets[b].tensor;
      s_.steps.push_back({StepKind::wait_all_reduce, Stream::compute, -1, t, static_cast<int>(b)});
      emit_free(t);
    }
    if (s_.settings.memory.precision == Precision::fp16) {
      s_.overflow = add_tensor("sgd.overflow", Shape{1}, Role::workspace, -1);
      emit_alloc(s_.overflow);
    }
    step(StepKind::update);
    emit_free(s_.overflow);
  }

  // Data-parallel: node i's parameter gradients are complete once its
  // backward step has run. They join the open bucket, which is all-reduced
  // as soon as it holds bucket_bytes, so communication starts while
  // backward goes on (PyTorch DDP's order).
  void add_to_bucket(int i) {
    if (s_.settings.memory.ranks <= 1) return;
    for (int g : s_.nodes[i].param_grads)
      if (g >= 0) {
        open_bucket_.push_back(g);
        open_bucket_bytes_ += s_.tensors[g].info.bytes();
      }
    if (open_bucket_bytes_ >= s_.settings.memory.bucket_bytes) emit_bucket();
  }
  void emit_bucket() {
    if (open_bucket_.empty()) return;
    std::int64_t count = 0;
    for (int g : open_bucket_) count += s_.tensors[g].info.shape.numel();
    const int index = static_cast<int>(s_.buckets.size());
    const int t = add_tensor("bucket" + std::to_string(index), Shape{count}, Role::weight_gradient, -1);
    emit_alloc(t);
    s_.steps.push_back({StepKind::all_reduce, Stream::comm, -1, t, index});
    s_.buckets.push_back({t, std::move(open_bucket_)});
    open_bucket_.clear();
    open_bucket_bytes_ = 0;
  }

  int tensor_of(const std::string& name) const {
    if (name == kDataTensor) return s_.data;
    if (name == kLabelsTensor) return s_.labels;
    return s_.nodes[net_.producer(name)].output;
  }

  // A node runs backward when a gradient reaches its output: it or something
  // before it has trainable parameters.
  void find_backward_nodes() {
    requires_grad_.assign(s_.tensors.size(), false);
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      NodeTensors& nt = s_.nodes[i];
      bool grad = std::any_of(nt.param_grads.begin(), nt.param_grads.end(), [](int g) { return g >= 0; });
      for (int t : nt.inputs) grad = grad || requires_grad_[t];
      requires_grad_[nt.output] = grad;
      nt.runs_backward = grad;
    }
    // Who reads what in backward; in reverse node order the last reader of a
    // tensor is the one with the smallest node index.
    // The first, in reverse order, is the one with the largest.
    last_backward_reader_.assign(s_.tensors.size(), -1);
    first_backward_read_.assign(s_.tensors.size(), -1);
    for (int i = static_cast<int>(nodes().size()) - 1; i >= 0; --i) {
      const NodeTensors& nt = s_.nodes[i];
      if (!nt.runs_backward) continue;
      const Layer& layer = *nodes()[i].layer;
      auto reads = [&](int t) {
        last_backward_reader_[t] = i;
        if (first_backward_read_[t] < 0) first_backward_read_[t] = i;
      };
      for (std::size_t j = 0; j < nt.inputs.size(); ++j)
        if (layer.backward_reads_input(static_cast<int>(j))) reads(nt.inputs[j]);
      if (layer.backward_reads_output()) reads(nt.output);
    }
  }

  // vDNN's layer choice: the inputs of the chosen layers that backward
  // will read leave for the host after forward.
  void choose_offloads() {
    const OffloadMode mode = s_.settings.memory.mode;
    if (!training() || mode == OffloadMode::base) return;
    if (mode == OffloadMode::autoswap || mode == OffloadMode::accudnn || mode == OffloadMode::hybrid) {
      for (int t : s_.settings.swapped) s_.tensors[t].offloaded = true;
      return;
    }
    int convs = 0;
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const Layer& layer = *nodes()[i].layer;
      const bool conv = layer.kind() == "conv2d" || layer.kind() == "depthwise_conv";
      const bool chosen = mode == OffloadMode::all ||
                          (conv && (mode == OffloadMode::conv || (mode == OffloadMode::aconv && convs % 2 == 0)));
      convs += conv;
      if (!chosen) continue;
      const NodeTensors& nt = s_.nodes[i];
      for (std::size_t j = 0; j < nt.inputs.size(); ++j)
        if (!layer.input_is_index(static_cast<int>(j)) && kept_for_backward(nt.inputs[j]))
          s_.tensors[nt.inputs[j]].offloaded = true;
    }
  }

  bool offloaded(int t) const { return t >= 0 && s_.tensors[t].offloaded; }
  bool recomputed(int t) const { return t >= 0 && s_.tensors[t].recomputed; }

  // A layer whose forward pass may run again for backward: not the loss,
  // and not a pass whose statistics are summed over the ranks (running it
  // again would mean another all-reduce).
  bool can_run_again(int node) const { return node != loss_ && !s_.nodes[node].forward_rank_sums; }
  static bool is_cheap(const Layer& layer) {
    return layer.kind() != "conv2d" && layer.kind() != "depthwise_conv" && layer.kind() != "linear";
  }
  // A tensor that backward reads and that stays on the device from its
  // forward pass to its last backward reader.
  bool stays(int t) const { return kept_for_backward(t) && !offloaded(t) && !recomputed(t); }
  // Whether layer-output `t` can be computed again in backward from tensors
  // that stay on the device: its layer can run again and each of its
  // inputs stays, and is still there when backward first reads `t` (its
  // last backward reader has not run yet), or can be computed again first.
  // `cheap`: through cheap layers only, and never through another
  // recomputed tensor, so that SuperNeurons' recomputes stay one short run
  // of cheap layers long.
  bool can_rebuild(int t, bool cheap) const { return can_rebuild(t, cheap, first_backward_read_[t]); }
  bool can_rebuild(int t, bool cheap, int at) const {
    const int p = s_.tensors[t].node;
    if (p < 0 || s_.nodes[p].output != t || offloaded(t) || !can_run_again(p)) return false;
    if (cheap && !is_cheap(*nodes()[p].layer)) return false;
    for (int x : s_.nodes[p].inputs) {
      if (stays(x) && last_backward_reader_[x] <= at) continue;
      if (cheap && recomputed(x)) return false;
      if (!can_rebuild(x, cheap, at)) return false;
    }
    return true;
  }

  // Which activations backward reads are freed after forward and computed
  // again before backward reads them (OffloadMode::recompute*).
  void choose_recomputes() {
    const OffloadMode mode = s_.settings.memory.mode;
    if (!training()) return;
    if (mode == OffloadMode::hybrid) {  // the MemoryPlan's choice, in forward order
      std::vector<int> chosen = s_.settings.recomputed;
      std::sort(chosen.begin(), chosen.end(), [&](int a, int b) { return s_.tensors[a].node < s_.tensors[b].node; });
      for (int t : chosen)
        if (t >= 0 && t < static_cast<int>(s_.tensors.size()) && kept_for_backward(t) && !offloaded(t) &&
            can_rebuild(t, false))
          s_.tensors[t].recomputed = true;
      return;
    }
    if (mode != OffloadMode::recompute && mode != OffloadMode::recompute_cheap) return;
    const bool cheap = mode == OffloadMode::recompute_cheap;
    std::vector<int> candidates;  // layer outputs backward reads, in forward order
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const int t = s_.nodes[i].output;
      if (kept_for_backward(t) && !offloaded(t)) candidates.push_back(t);
    }
    if (cheap) {
      for (int t : candidates)
        if (can_rebuild(t, true)) s_.tensors[t].recomputed = true;
      return;
    }
    // Chen et al.: sqrt(n) segments, each ending in a kept checkpoint that
    // everything after it reaches the segment through (a residual block's
    // output, not a tensor inside it), so that recomputing one segment
    // never reaches back into the one before. The segments are cut by
    // bytes, as Chen's memory-planning algorithm does (a segment ends once
    // it holds 1/sqrt(n) of the bytes), not by count: VGG's first layers
    // hold as much as all its later ones.
    const std::vector<bool> cut = single_frontier();
    std::size_t total = 0;
    for (int t : candidates) total += round_up(s_.tensors[t].info.bytes());
    const double segment = static_cast<double>(total) / std::max(1.0, std::sqrt(static_cast<double>(candidates.size())));
    double held = 0;
    for (int t : candidates) {
      held += static_cast<double>(round_up(s_.tensors[t].info.bytes()));
      if (held >= segment && cut[static_cast<std::size_t>(s_.tensors[t].node)]) {
        held = 0;
        continue;  // a checkpoint
      }
      if (can_rebuild(t, false)) s_.tensors[t].recomputed = true;
    }
  }

  // Per node: whether its output is the only tensor forward passes after
  // it read from it and everything before it (the graph's articulation
  // points along the forward order).
  std::vector<bool> single_frontier() const {
    std::vector<int> last_reader(s_.tensors.size(), -1);
    for (std::size_t i = 0; i < nodes().size(); ++i)
      for (int t : s_.nodes[i].inputs) last_reader[t] = std::max(last_reader[t], static_cast<int>(i));
    std::vector<bool> cut(nodes().size(), false);
    // Sweep forward keeping the count of tensors produced so far and read later.
    std::vector<int> open_until;  // per open tensor, its last reader
    for (int t : {s_.data, s_.labels})
      if (last_reader[t] >= 0) open_until.push_back(last_reader[t]);
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const int node = static_cast<int>(i);
      std::erase_if(open_until, [&](int last) { return last <= node; });
      const int out = s_.nodes[i].output;
      if (last_reader[out] > node) open_until.push_back(last_reader[out]);
      // The labels stay open to the loss: they are read once, from the host's batch.
      const int labels_open = last_reader[s_.labels] > node ? 1 : 0;
      cut[i] = static_cast<int>(open_until.size()) - labels_open == 1 && last_reader[out] > node;
    }
    return cut;
  }

  // `t` and whatever its layer reads that is not on the device either,
  // each after what it reads: the recomputes that bring `t` back.
  void recompute_order(int t, std::vector<int>& order) const {
    if (live(t) || std::find(order.begin(), order.end(), t) != order.end()) return;
    const int p = s_.tensors[t].node;
    if (p < 0 || s_.nodes[p].output != t || offloaded(t) || !can_run_again(p))
      throw std::logic_error("planner: " + name(t) + " is not on the device for a recompute and cannot be recomputed");
    for (int x : s_.nodes[p].inputs) recompute_order(x, order);
    order.push_back(t);
  }
  // Before node i's backward pass: the recomputed tensors it reads,
  // computed again. A tensor recomputed only for another one's sake (no
  // backward pass still to come reads it) is freed right after the last
  // recompute that reads it.
  void rebuild_for_backward(int i) {
    const NodeTensors& nt = s_.nodes[i];
    const Layer& layer = *nodes()[i].layer;
    std::vector<int> order;
    for (std::size_t j = 0; j < nt.inputs.size(); ++j)
      if (layer.backward_reads_input(static_cast<int>(j)) && recomputed(nt.inputs[j]))
        recompute_order(nt.inputs[j], order);
    if (layer.backward_reads_output() && recomputed(nt.output)) recompute_order(nt.output, order);
    auto temporary = [&](int t) { return last_backward_reader_[t] < 0 || last_backward_reader_[t] > i; };
    std::vector<std::size_t> last_read(order.size(), 0);  // per entry, the last entry whose layer reads it
    for (std::size_t k = 0; k < order.size(); ++k)
      for (int x : s_.nodes[s_.tensors[order[k]].node].inputs) {
        const auto it = std::find(order.begin(), order.end(), x);
        if (it != order.end()) last_read[static_cast<std::size_t>(it - order.begin())] = k;
      }
    for (std::size_t k = 0; k < order.size(); ++k) {
      const int t = order[k];
      const NodeTensors& pt = s_.nodes[s_.tensors[t].node];
      emit_alloc(t);
      emit_alloc(pt.forward_workspace);
      step(StepKind::recompute, s_.tensors[t].node, t);
      emit_free(pt.forward_workspace);
      for (std::size_t e = 0; e < k; ++e)
        if (last_read[e] == k && temporary(order[e])) emit_free(order[e]);
    }
  }

  // Offloads start as soon as the tensor is complete, overlapping the
  // layers that still read it; its device memory goes after its last
  // forward reader (and, under sync, the layer-end wait for the copy).
  void emit_offload(int t) {
    s_.steps.push_back({StepKind::offload, Stream::offload, -1, t, -1});
    if (s_.settings.memory.transfer == TransferMode::sync) offloads_in_flight_.push_back(t);
  }
  void emit_wait_offloads() {
    for (int t : offloads_in_flight_) s_.steps.push_back({StepKind::wait_offload, Stream::compute, -1, t, -1});
    offloads_in_flight_.clear();
  }

  void plan_forward() {
    // The last forward reader of each tensor.
    std::vector<int> last_forward_reader(s_.tensors.size(), -1);
    for (std::size_t i = 0; i < nodes().size(); ++i)
      for (int t : s_.nodes[i].inputs) last_forward_reader[t] = static_cast<int>(i);
    choose_offloads();
    choose_recomputes();

    // The batch arrives through the prefetch stream, like any tensor that
    // comes from host memory.
    for (int t : {s_.data, s_.labels}) {
      emit_alloc(t);
      s_.steps.push_back({StepKind::prefetch, Stream::prefetch, -1, t, -1});
      s_.steps.push_back({StepKind::wait_prefetch, Stream::compute, -1, t, -1});
      if (offloaded(t)) emit_offload(t);
    }
    for (std::size_t i = 0; i < nodes().size(); ++i) {
      const NodeTensors& nt = s_.nodes[i];
      const int node = static_cast<int>(i);
      emit_alloc(nt.output, offloaded(nt.output));
      for (int t : nt.saved) emit_alloc(t);
      emit_alloc(nt.forward_workspace);
      step(StepKind::forward, node);
      emit_free(nt.forward_workspace);
      emit_wait_offloads();  // sync: the layer ends when its transfers do
      if (!training())
        for (int t : nt.saved) emit_free(t);
      for (int t : nt.inputs)
        if (last_forward_reader[t] == node && (!kept_for_backward(t) || offloaded(t) || recomputed(t))) {
          if (offloaded(t))
            emit_free_offloaded(t);
          else
            emit_free(t);
        }
      if (offloaded(nt.output)) {
        emit_offload(nt.output);
        if (last_forward_reader[nt.output] < 0) {  // only backward reads it
          emit_wait_offloads();
          emit_free_offloaded(nt.output);
        }
      }
      // An output nobody reads (other than the loss) is dead at once.
      if (last_forward_reader[nt.output] < 0 && nt.output != s_.loss &&
          (!kept_for_backward(nt.output) || recomputed(nt.output)))
        emit_free(nt.output);
    }
    emit_wait_offloads();
  }

  bool kept_for_backward(int t) const { return training() && last_backward_reader_[t] >= 0; }

  // The offloaded tensors in the order backward needs them: by their first
  // backward reader, which in reverse order is the highest node index.
  std::vector<int> prefetch_order() {
    std::vector<std::pair<int, int>> need;  // (first backward reader, tensor)
    for (int t = 0; t < static_cast<int>(s_.tensors.size()); ++t) {
      if (!offloaded(t)) continue;
      int first = -1;
      for (int i = static_cast<int>(nodes().size()) - 1; i >= 0 && first < 0; --i) {
        const NodeTensors& nt = s_.nodes[i];
        if (!nt.runs_backward) continue;
        const Layer& layer = *nodes()[i].layer;
        for (std::size_t j = 0; j < nt.inputs.size(); ++j)
          if (nt.inputs[j] == t && layer.backward_reads_input(static_cast<int>(j))) first = i;
        if (nt.output == t && layer.backward_reads_output()) first = i;
      }
      need.emplace_back(first, t);
    }
    std::sort(need.begin(), need.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
    std::vector<int> order;
    for (auto [first, t] : need) {
      first_backward_reader_[t] = first;
      order.push_back(t);
    }
    return order;
  }

  // Issues the prefetches node i needs now, plus `lookahead` more ahead.
  void emit_prefetches(int i) {
    // Already in flight for later layers (the order is by need, so they are
    // the last ones issued).
    int ahead = 0;
    for (std::size_t k = next_prefetch_; k > 0 && first_backward_reader_[prefetch_order_[k - 1]] < i; --k) ++ahead;
    while (next_prefetch_ < prefetch_order_.size()) {
      const int t = prefetch_order_[next_prefetch_];
      if (first_backward_reader_[t] < i && ahead++ >= s_.settings.memory.lookahead) break;
      emit_alloc(t);
      s_.steps.push_back({StepKind::prefetch, Stream::prefetch, -1, t, -1});
      prefetches_in_flight_.push_back(t);
      ++next_prefetch_;
    }
  }
  void emit_wait_prefetch(int t) {
    auto it = std::find(prefetches_in_flight_.begin(), prefetches_in_flight_.end(), t);
    if (it == prefetches_in_flight_.end()) return;  // already waited for
    prefetches_in_flight_.erase(it);
    s_.steps.push_back({StepKind::wait_prefetch, Stream::compute, -1, t, -1});
  }

  void plan_backward() {
    std::vector<int> grad(s_.tensors.size(), -1);  // the gradient tensor of each activation
    freed_saved_.assign(nodes().size(), false);
    first_backward_reader_.assign(s_.tensors.size(), -1);
    prefetch_order_ = prefetch_order();
    const bool prefetch_first = s_.settings.memory.order == AllocOrder::prefetch_first;
    for (int i = static_cast<int>(nodes().size()) - 1; i >= 0; --i) {
      NodeTensors& nt = s_.nodes[i];
      if (!nt.runs_backward) continue;
      const Layer& layer = *nodes()[i].layer;
      nt.output_grad = grad[nt.output];
      if (i != loss_ && nt.output_grad < 0) {
        nt.runs_backward = false;  // nothing downstream reached the loss
        free_after_backward(i);
        continue;
      }
      // Recomputed first, while the pool has not yet taken this layer's
      // gradients and workspace.
      rebuild_for_backward(i);
      // Where each input's gradient goes: straight into the tensor's
      // gradient for its first consumer (in backward order), into a
      // temporary that is then accumulated for later ones.
      if (prefetch_first) emit_prefetches(i);
      std::vector<std::pair<int, int>> accumulate;  // (gradient, temporary)
      for (std::size_t j = 0; j < nt.inputs.size(); ++j) {
        const int x = nt.inputs[j];
        if (!requires_grad_[x] || layer.input_is_index(static_cast<int>(j))) continue;
        const TensorInfo& xi = s_.tensors[x].info;
        if (grad[x] < 0) {
          grad[x] = add_tensor(xi.name + ".grad", xi.shape, Role::activation_gradient, i, xi.dtype);
          nt.input_grads[j] = grad[x];
        } else {
          nt.input_grads[j] = add_tensor(xi.name + ".grad." + layer.name(), xi.shape,
                                         Role::activation_gradient, i, xi.dtype);
          accumulate.emplace_back(grad[x], nt.input_grads[j]);
        }
        emit_alloc(nt.input_grads[j]);
      }
      if (nt.backward_workspace >= 0)
        s_.tensors[nt.backward_workspace].info.shape =
            words(backward_layer_workspace_[i] + f32_views(s_, layer, i, false).bytes);
      emit_alloc(nt.backward_workspace);
      if (!prefetch_first) emit_prefetches(i);
      for (std::size_t j = 0; j < nt.inputs.size(); ++j)
        if (layer.backward_reads_input(static_cast<int>(j))) emit_wait_prefetch(nt.inputs[j]);
      if (layer.backward_reads_output()) emit_wait_prefetch(nt.output);
      step(StepKind::backward, i);
      emit_free(nt.backward_workspace);
      if (s_.settings.memory.transfer == TransferMode::sync)  // the layer ends when its transfers do
        while (!prefetches_in_flight_.empty()) emit_wait_prefetch(prefetches_in_flight_.front());
      for (auto [target, temp] : accumulate) {
        step(StepKind::accumulate, i, target, temp);
        emit_free(temp);
      }
      emit_free(nt.output_grad);
      free_after_backward(i);
      add_to_bucket(i);
    }
    emit_bucket();
    // Saved tensors of nodes that never needed a backward pass.
    for (std::size_t i = 0; i < nodes().size(); ++i)
      if (!s_.nodes[i].runs_backward && !freed_saved_[i])
        for (int t : s_.nodes[i].saved) emit_free(t);
  }

  // What node i's backward pass was the last to need.
  void free_after_backward(int i) {
    const NodeTensors& nt = s_.nodes[i];
    for (int t : nt.saved) emit_free(t);
    freed_saved_[i] = true;
    // A recomputed tensor is not on the device when its readers ended up
    // running no backward pass (nothing reached the loss) to recompute it.
    auto done_with = [&](int t) { return last_backward_reader_[t] == i && (!recomputed(t) || live(t)); };
    for (int t : nt.inputs)
      if (done_with(t)) emit_free(t);
    if (done_with(nt.output)) emit_free(nt.output);
  }

  // Every transient tensor is allocated once and freed once, while live;
  // the schedule's peak load is its trace's, as engine/memory/alloc_trace.h
  // defines it for every trace.
  void predict_load() {
    std::vector<bool> live(s_.tensors.size(), false);
    for (const Step& st : s_.steps) {
      if (st.kind == StepKind::alloc) {
        if (live[st.tensor]) throw std::logic_error("planner allocated " + name(st.tensor) + " twice");
        live[st.tensor] = true;
      } else if (st.kind == StepKind::free) {
        if (!live[st.tensor]) throw std::logic_error("planner freed " + name(st.tensor) + " while not live");
        live[st.tensor] = false;
      }
    }
    for (std::size_t t = 0; t < live.size(); ++t)
      if (live[t]) throw std::logic_error("planner left " + name(static_cast<int>(t)) + " allocated");
    s_.peak_load_bytes = peak_load_bytes(trace_of(s_));
  }

  // Pinned slots for offloaded tensors: taken at the offload, given back
  // once the tensor is on the device again; best-fit, so slots are reused.
  // Compressed offloads only need the two staging slots (Schedule::pinned_bytes).
  void place_host_slots() {
    if (s_.settings.memory.compress) {
      for (const Step& st : s_.steps)
        if (st.kind == StepKind::offload)
          s_.staging_bytes = std::max(s_.staging_bytes, round_up(s_.tensors[st.tensor].info.bytes()));
      s_.pinned_bytes = 2 * s_.staging_bytes;
      return;
    }
    FreeList host(std::size_t{1} << 50);
    std::size_t extent = 0;
    std::vector<bool> on_host(s_.tensors.size(), false);
    for (const Step& st : s_.steps) {
      if (st.kind == StepKind::offload) {
        const std::size_t bytes = round_up(s_.tensors[st.tensor].info.bytes());
        const std::size_t offset = *host.take_best_fit(bytes);
        s_.tensors[st.tensor].host_offset = offset;
        on_host[st.tensor] = true;
        extent = std::max(extent, offset + bytes);
      } else if (st.kind == StepKind::wait_prefetch && on_host[st.tensor]) {
        host.give_back(s_.tensors[st.tensor].host_offset, round_up(s_.tensors[st.tensor].info.bytes()));
        on_host[st.tensor] = false;
      }
    }
    s_.pinned_bytes = extent;
  }

  std::string name(int t) const { return s_.tensors[t].info.name; }

  const Network& net_;
  const int loss_;  // the loss layer's node (Network::loss_node checks the network each time)
  const KernelQueries& k_;
  NetworkShapes shapes_;
  Schedule s_;
  std::vector<bool> requires_grad_;
  std::vector<std::size_t> backward_layer_workspace_;  // per node, before its f32 views (rank sums included)
  std::vector<int> last_backward_reader_;
  std::vector<int> first_backward_read_;  // the largest node index whose backward reads each tensor
  std::vector<bool> live_;  // on the device after the steps so far
  std::vector<bool> freed_saved_;
  std::vector<int> offloads_in_flight_;    // sync: waited for at the end of the layer
  std::vector<int> prefetch_order_;        // offloaded tensors in the order backward needs them
  std::vector<int> first_backward_reader_;
  std::size_t next_prefetch_ = 0;
  std::vector<int> prefetches_in_flight_;  // issued, not yet waited for
  std::vector<int> open_bucket_;           // gradients complete, not yet in a bucket
  std::size_t open_bucket_bytes_ = 0;
};

}  // namespace

Schedule plan_schedule(const Network& network, std::int64_t batch, const PlanSettings& settings,
                       const KernelQueries& kernels) {
  if (settings.memory.mode == OffloadMode::dyn)
    throw std::logic_error("mode dyn is chosen by profiling before anything is planned");
  return Planner(network, batch, settings, kernels).build();
}

}  // namespace tidepool
