#include "engine/tune/swap_weight_tuning.h"

#include <stdexcept>
#include <vector>

#include "engine/run/trainer.h"

namespace tidepool {

namespace {

// One simulated iteration's time; the inputs' values do not matter.
double iteration_us(Trainer& trainer, std::vector<float>& images, std::vector<std::int32_t>& labels) {
  const IterationResult r = trainer.train_step(images.data(), labels.data());
  return r.end_us - r.start_us;
}

}  // namespace

SwapWeightSearch tune_swap_weights(const Network& net, std::int64_t batch, const MemorySettings& settings,
                                   const std::function<std::unique_ptr<Device>()>& make_device,
                                   const SwapWeightSearchOptions& options) {
  if (settings.mode != OffloadMode::autoswap || !settings.budget_bytes)
    throw std::invalid_argument("AutoSwap's weights are tuned for mode autoswap under a --budget");
  MemorySettings base = settings;
  base.mode = OffloadMode::base;
  base.budget_bytes = 0;
  const std::unique_ptr<Device> base_device = make_device();
  Trainer without(*base_device, net, {.batch = batch, .memory = base});
  const Schedule& s = without.train_schedule();
  std::vector<float> images(static_cast<std::size_t>(s.tensors[static_cast<std::size_t>(s.data)].info.shape.numel()));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(batch), 0);
  iteration_us(without, images, labels);  // a real device's first iteration builds its kernels
  const double baseline = iteration_us(without, images, labels);

  MemorySettings tried = settings;
  tried.swap_score = SwapScore::bo;
  const std::unique_ptr<Device> device = make_device();
  Trainer trainer(*device, net, {.batch = batch, .memory = tried});
  iteration_us(trainer, images, labels);
  return search_swap_weights(
      [&](const SwapWeights& w) {
        tried.swap_weights = w;
        trainer.apply(tried);
        return iteration_us(trainer, images, labels) - baseline;
      },
      options);
}

}  // namespace tidepool
