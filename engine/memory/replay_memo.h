// Replays already made in this process, kept so that one question is
// answered once. What a replay through a fresh allocator gives depends only
// on its requests, the policy, the pool and the park horizon, and the
// planner asks the same question many times over: the rows of `plan` that
// differ only in a setting the device answers alike for (conv schemes `m`
// and `p` on a device whose two schemes pick the same workspaces) have the
// same schedules, and the window planning a setting again (a heuristic
// switched back) replays what it replayed before.
//
// An answer is found by all of its inputs compared whole, the requests
// event by event, not by a hash alone, so a kept answer is the answer the
// replay would give: the figures of `plan` are the same with or without it.
// Replays with an observer are never kept (the observer wants the events).
// The requests are kept once however many answers refer to them, and the
// least recently used answers go when the requests kept pass kMemoBytes.
// Safe to use from several threads (`plan` plans a row per core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "engine/memory/alloc_trace.h"
#include "engine/memory/pool_search.h"
#include "engine/memory/replay.h"

namespace tidepool {

// The bytes of requests the memo keeps at most (resnet152 ImageNet's two
// traces are about 0.3 MB; a `plan` table has a few dozen distinct ones).
inline constexpr std::size_t kMemoBytes = std::size_t{64} << 20;

// A replay's requests, by reference, with their fingerprint (every field
// of every event, the step, stream and role included, hashed): made once by a caller that
// asks many questions of the same requests.
std::uint64_t fingerprint(const AllocTrace& trace, std::uint64_t hash);
struct MemoRequests {
  std::vector<const AllocTrace*> traces;
  std::uint64_t fingerprint = 0;
};

// replay_schedule's answer for `traces` (first, steady), or nothing yet.
std::optional<ScheduleReplay> find_schedule_replay(const MemoRequests& traces, std::string_view heuristic,
                                                   std::size_t pool_bytes, int park_horizon);
void keep_schedule_replay(const MemoRequests& traces, std::string_view heuristic, std::size_t pool_bytes,
                          int park_horizon, const ScheduleReplay& answer);

// search_pool_size's answer for one trace from its peak load, or nothing yet.
std::optional<PoolSearch> find_pool_search(const MemoRequests& trace, std::string_view heuristic, int park_horizon);
void keep_pool_search(const MemoRequests& trace, std::string_view heuristic, int park_horizon,
                      const PoolSearch& answer);

// Empties the memo: for a benchmark that times replays, not lookups.
void forget_replays();
// The bytes of requests the memo keeps now (at most kMemoBytes).
std::size_t kept_replay_bytes();

}  // namespace tidepool
