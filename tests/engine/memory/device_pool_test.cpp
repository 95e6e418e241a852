// The device pool's fences: a block freed while its copy to the host may
// still read it tells whoever is placed over its range next to wait for
// that copy. The copies are held back here behind gates on the offload
// stream, so that "still running" is a fact of the test, not of timing.
#include "engine/memory/device_pool.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <vector>

#include "engine/device/cpu/cpu_device.h"

namespace tidepool {
namespace {

constexpr std::size_t U = 1 << 16;

AllocRequest units(int tensor, std::size_t n) { return {n * U, tensor, Role::activation, false}; }

std::vector<std::int64_t> waited_for(const DevicePool::Placed& p) {
  std::vector<std::int64_t> ids;
  for (const auto& c : p.ready) ids.push_back(c.id);
  return ids;
}

// Holds the offload stream until opened (or destroyed, so that a failing
// test does not leave the device's worker waiting forever).
class Gate {
 public:
  explicit Gate(Device& device) {
    device.host_task(Stream::offload, [f = open_.get_future().share()] { f.wait(); });
  }
  ~Gate() { open(); }
  void open() {
    if (!opened_) open_.set_value();
    opened_ = true;
  }

 private:
  std::promise<void> open_;
  bool opened_ = false;
};

// Tensor 0 is offloaded before tensor 1 but freed after it (an early
// tensor with a late last reader, as a residual join's output is): a block
// over both ranges must wait for tensor 1's copy, the later one, which the
// last fence freed (tensor 0's) does not cover.
TEST(DevicePool, ABlockWaitsForEveryCopyStillReadingItsRangeNotOnlyTheLastFreed) {
  CpuDevice device;
  DevicePool pool(device, "first-fit", 8 * U);
  pool.start_iteration(0);
  const DevicePool::Placed a = pool.place(0, units(0, 1), 0, "a");
  const DevicePool::Placed b = pool.place(1, units(1, 1), 1, "b");
  ASSERT_EQ(a.offset, 0u);
  ASSERT_EQ(b.offset, U);
  auto first = std::make_unique<Gate>(device);
  std::shared_ptr<DeviceEvent> a_copied = device.record(Stream::offload);
  Gate second(device);
  std::shared_ptr<DeviceEvent> b_copied = device.record(Stream::offload);
  pool.free(1, 2, /*park=*/false, b_copied);
  pool.free(0, 3, /*park=*/false, a_copied);

  const DevicePool::Placed c = pool.place(2, units(2, 2), 4, "c");
  EXPECT_EQ(c.offset, 0u) << "over both freed ranges";
  EXPECT_EQ(waited_for(c), (std::vector<std::int64_t>{1, 0})) << "both copies are still running";

  // A finished copy is nothing to wait for.
  first->open();
  device.synchronize(*a_copied);
  pool.free(2, 5, /*park=*/false, a_copied);
  const DevicePool::Placed d = pool.place(3, units(3, 1), 6, "d");
  EXPECT_EQ(d.offset, 0u);
  EXPECT_TRUE(d.ready.empty());
  second.open();
  device.synchronize(*b_copied);
}

}  // namespace
}  // namespace tidepool
