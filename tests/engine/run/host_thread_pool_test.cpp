// The host threads that split one tensor's compression: every part runs
// once, errors come back to the caller, and two callers share the pool.
#include "engine/run/host_thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace tidepool {
namespace {

TEST(HostThreadPool, RunsEveryPartOnceAndReturnsWhenAllHave) {
  for (int threads : {1, 3}) {
    HostThreadPool pool(threads);
    EXPECT_EQ(pool.threads(), threads);
    std::vector<int> runs(50, 0);  // each part writes its own slot
    pool.run(runs.size(), [&](std::size_t i) { ++runs[i]; });
    for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i], 1) << "part " << i;
    pool.run(0, [&](std::size_t) { ADD_FAILURE() << "no parts, no calls"; });
  }
}

TEST(HostThreadPool, PartsRunOnSeveralThreads) {
  HostThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> seen;
  std::atomic<int> arrived{0};
  // Each part waits until three have started: only three threads get there.
  pool.run(3, [&](std::size_t) {
    ++arrived;
    while (arrived.load() < 3) std::this_thread::yield();
    std::lock_guard lock(m);
    seen.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen.count(std::this_thread::get_id()), 1u) << "the caller is one of them";
}

TEST(HostThreadPool, AnExceptionInAPartReachesTheCaller) {
  HostThreadPool pool(2);
  std::atomic<int> ran{0};
  EXPECT_THROW(pool.run(8,
                        [&](std::size_t i) {
                          ++ran;
                          if (i == 5) throw std::runtime_error("part 5");
                        }),
               std::runtime_error);
  EXPECT_EQ(ran.load(), 8) << "the other parts still ran";
  pool.run(2, [&](std::size_t) { ++ran; });  // and the pool still works
  EXPECT_EQ(ran.load(), 10);
}

TEST(HostThreadPool, TwoCallersAtOnceEachGetTheirOwnParts) {
  HostThreadPool pool(2);
  std::vector<int> a(200, 0), b(300, 0);
  std::thread other([&] {
    for (int r = 0; r < 20; ++r) pool.run(b.size(), [&](std::size_t i) { ++b[i]; });
  });
  for (int r = 0; r < 20; ++r) pool.run(a.size(), [&](std::size_t i) { ++a[i]; });
  other.join();
  for (int v : a) EXPECT_EQ(v, 20);
  for (int v : b) EXPECT_EQ(v, 20);
}

}  // namespace
}  // namespace tidepool
