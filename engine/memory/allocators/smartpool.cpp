// smartpool: SmartPool (Zhang et al., "Efficient Memory Management for
// GPU-based Deep Learning Systems", §III-C and §V). Training repeats the
// same requests every iteration, so after watching one iteration the pool
// knows every block's size and lifetime and can place the next iterations
// offline — the dynamic storage allocation problem solved as weighted
// interval colouring — and then serve each request by lookup.
//
// Granularity: kAllocGranularity (256 B), like every policy; a zero-byte
// request still takes one granule so every live block has its own offset.
//
// Learning. Every request is recorded — its key (rounded size and the
// tensor id the request carries), where it went, when it was allocated and
// freed; the clock ticks once per allocate and per free — since learning
// began, or, while a plan serves, since the current period began. A period
// is hypothesised when a request repeats the key of a recorded request k
// and the window from k to now is a closed episode:
//   - every block allocated in the window has been freed, and
//   - no block allocated before the window was freed inside it,
// so the live blocks now are exactly those live when the window began (the
// parameters, say). The window is then one period, those live blocks are
// fixed obstacles, and the period is placed offline. This is "the recorded
// sequence repeats", checked on one observed period: the paper waits for
// two identical consecutive subsequences; here the hypothesis is verified
// request by request while it is served, so the second iteration is
// already served by lookup (the planner's dry run measures exactly that
// second iteration). A hypothesis that is wrong costs a fallback: in an
// offloading schedule a tensor offloaded and prefetched again repeats its
// key inside one iteration, that hypothesis fails at its next request, and
// the true period is found at the next iteration's start (the latest
// earlier request with the key is tried first, then up to kCandidates
// before it). Our executor frees every transient block by the end of an
// iteration and keys carry the planner's tensor ids, so in training the
// period found is exactly one iteration.
//
// Offline placement (the paper's heuristic): blocks taken one by one in a
// fixed order, each put into the best-fitting hole between the already
// placed blocks whose lifetimes overlap its own (and the obstacles), or
// above them all when no hole holds it. The paper orders by size,
// descending; that alone leaves up to 14% above the peak load on the
// evaluation passes of the CIFAR ResNets, so four orders are tried (see
// Group::orderings: size with best fit and with first fit, the paper's
// two; breadth, the load a block lives through; area) and, as a further
// candidate, the layout the period actually had while it was recorded
// (best fit's) — a learned period never needs more memory than best fit
// did. The smallest footprint wins; equal keys keep allocation order. On
// the eight CIFAR networks of the paper's Table I (ResNet-18/34/50/101,
// VGG-11/13/16/19, batch 100, the planner's schedules) the layout found
// for the steady state equals the peak load, training and evaluation alike.
//
// Serving. While a plan is active, request i of the period gets the i-th
// planned offset, provided the key matches and the range is still wholly
// free (the free list is kept exact at all times, so this check is also
// the guarantee that a lookup never overlaps a live block). A range that is
// blocked falls back to best fit for that request and the period is
// re-placed around the current live blocks when it next begins (as it is
// whenever the live blocks at a period's start differ from the obstacles
// it was placed around). A request whose key differs from the plan's ends
// the plan — unless another remembered period began the same way and goes
// on with it (below) —: it goes to best fit and learning starts again, the
// current period's recorded beginning included, so a changed period is
// learned whole at its next start.
//
// More than one period. Up to kLibrary periods are remembered. A training
// and an evaluation iteration alternating share their first requests
// (data, labels, the first layer) and part only later, so periods that
// begin alike are placed jointly: a trie over their requests, the shared
// beginning placed once, each period's own blocks placed around it, the
// layout chosen for the worst period's footprint first and the total next.
// At a period's start the most recently used matching period is served;
// where the requests part from it, the one they follow takes over at the
// same position, its beginning already in place. When learning reaches a
// closed episode at whose end a remembered period begins, what was
// recorded since learning began is itself planned as a period (how an
// evaluation pass whose first request differs is learned). In a training
// run alternating with evaluation the training iterations keep their own
// layout (ratio 1 on the CIFAR networks above) and the evaluation pass fits
// in the pool training needs.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <future>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "engine/memory/allocator.h"
#include "engine/memory/allocators/free_list.h"

namespace tidepool {
namespace {

constexpr std::size_t kLibrary = 8;            // remembered periods
constexpr std::size_t kMaxRecord = 1u << 18;   // recorded requests before the record restarts (no period that long)
constexpr std::size_t kCandidates = 8;        // earlier requests with the same key tried as a period's start
// Beyond this many blocks only the recorded layout is kept: placement is quadratic.
constexpr std::size_t kMaxOfflineBlocks = 1u << 12;
// From this many blocks each ordering is placed on its own thread: a
// resnet152 ImageNet period (about 1,800 blocks) takes 2-3 ms an ordering
// (its smartpool rows in scheme m took 115 ms alone, 93-108 ms so on two
// quiet cores), a resnet50's (600) or a CIFAR network's (250) too little
// to pay for a thread.
constexpr std::size_t kPlaceOnThreadsFrom = 1u << 10;

struct Key {
  std::size_t bytes = 0;
  int tensor = -1;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  std::size_t operator()(const Key& k) const { return k.bytes * 1000003u ^ static_cast<std::size_t>(k.tensor); }
};

// One block of a period: its size and lifetime [begin, end) on the clock.
struct Item {
  std::size_t bytes;
  std::uint64_t begin, end;
  bool operator==(const Item&) const = default;
};
using Interval = std::pair<std::size_t, std::size_t>;  // [first, second)

struct Plan {
  std::vector<Key> keys;             // the period's requests, in order
  std::vector<std::size_t> offsets;  // where each goes
  std::vector<Item> items;           // sizes and lifetimes, to re-place around other obstacles
  std::vector<Interval> obstacles;   // the live blocks it was placed around
  std::size_t footprint = 0;
};

// The largest of `values` over [a, b), b > a, in constant time: row k
// holds the maxima over the ranges of 2^k values from each index.
class RangeMax {
 public:
  explicit RangeMax(std::vector<std::size_t> values) {
    rows_.push_back(std::move(values));
    for (std::size_t width = 2; width <= rows_[0].size(); width *= 2) {
      const std::vector<std::size_t>& below = rows_.back();
      std::vector<std::size_t> row(rows_[0].size() - width + 1);
      for (std::size_t i = 0; i < row.size(); ++i) row[i] = std::max(below[i], below[i + width / 2]);
      rows_.push_back(std::move(row));
    }
  }
  std::size_t operator()(std::uint64_t a, std::uint64_t b) const {
    const int k = std::bit_width(b - a) - 1;
    const std::vector<std::size_t>& row = rows_[static_cast<std::size_t>(k)];
    return std::max(row[a], row[b - (std::uint64_t{1} << k)]);
  }

 private:
  std::vector<std::vector<std::size_t>> rows_;
};

// Periods placed together. Periods that begin with the same requests (a
// training and an evaluation iteration share their first layers) share
// those blocks: a trie over the key sequences, one node per block, a node at
// depth d being request d of every period that passes through it. Two
// nodes conflict when some period holds both with overlapping lifetimes.
class Group {
 public:
  explicit Group(std::vector<Plan*> plans) : plans_(std::move(plans)) {
    std::map<std::tuple<int, std::size_t, int>, int> child;  // (parent, key) -> node
    node_of_.resize(plans_.size());
    for (std::size_t p = 0; p < plans_.size(); ++p) {
      int parent = -1;
      for (std::size_t i = 0; i < plans_[p]->keys.size(); ++i) {
        const Key& k = plans_[p]->keys[i];
        auto [it, added] = child.emplace(std::make_tuple(parent, k.bytes, k.tensor), static_cast<int>(bytes_.size()));
        if (added) {
          bytes_.push_back(k.bytes);
          mask_.push_back(0);
          depth_.push_back(static_cast<std::uint32_t>(i));
        }
        mask_[it->second] |= 1u << p;
        node_of_[p].push_back(it->second);
        parent = it->second;
      }
    }
    // Each node's span: the union of its lifetimes, a cheap first test
    // for conflict (two nodes conflict only if their spans overlap), and
    // the whole test in a group of one plan.
    span_.assign(size(), {std::numeric_limits<std::uint64_t>::max(), 0});
    for (std::size_t p = 0; p < plans_.size(); ++p)
      for (std::size_t i = 0; i < node_of_[p].size(); ++i) {
        Span& s = span_[static_cast<std::size_t>(node_of_[p][i])];
        s.begin = std::min(s.begin, plans_[p]->items[i].begin);
        s.end = std::max(s.end, plans_[p]->items[i].end);
      }
  }

  std::size_t size() const { return bytes_.size(); }

  bool conflict(std::size_t a, std::size_t b) const {
    for (std::uint32_t common = mask_[a] & mask_[b]; common; common &= common - 1) {
      const Plan& p = *plans_[static_cast<std::size_t>(__builtin_ctz(common))];
      const Item &x = p.items[depth_[a]], &y = p.items[depth_[b]];
      if (x.begin < y.end && y.begin < x.end) return true;
    }
    return false;
  }

  // The layout the plans have now (for a new one, where its requests went
  // while it was recorded), if they agree on every shared block. With
  // `from` 1, the first plan's own blocks are left out (unset).
  std::optional<std::vector<std::optional<std::size_t>>> current(std::size_t from = 0) const {
    std::vector<std::optional<std::size_t>> offset(size());
    for (std::size_t p = from; p < plans_.size(); ++p)
      for (std::size_t i = 0; i < node_of_[p].size(); ++i) {
        std::optional<std::size_t>& o = offset[node_of_[p][i]];
        if (o && *o != plans_[p]->offsets[i]) return std::nullopt;
        o = plans_[p]->offsets[i];
      }
    return offset;
  }

  // The orders the offline placement tries (equal keys keep trie order,
  // which is allocation order):
  //   - size descending, best fit and first fit: SmartPool's own heuristic;
  //   - breadth descending: by the highest memory load during the block's
  //     lifetime, then size — the blocks that live through the peak are
  //     laid down first and packed against each other, which is what
  //     decides the footprint (on the CIFAR ResNets' evaluation passes size
  //     order leaves up to 14% above the peak load, this order nothing);
  //   - area descending (size × lifetime): long-lived large blocks first,
  //     the order that wins where the others do not (VGG-11 evaluation).
  std::vector<std::pair<std::vector<std::size_t>, bool>> orderings() const {
    std::vector<std::size_t> breadth(size(), 0), life(size(), 0);
    for (std::size_t p = 0; p < plans_.size(); ++p) {
      const std::vector<Item>& items = plans_[p]->items;
      if (items.empty()) continue;
      std::uint64_t first = std::numeric_limits<std::uint64_t>::max(), last = 0;
      for (const Item& it : items) {
        first = std::min(first, it.begin);
        last = std::max(last, it.end);
      }
      // The load at each tick, from the changes at the blocks' ends
      // (unsigned sums wrap and come back exact), and its maximum over
      // each lifetime from a table of maxima over power-of-two ranges:
      // walking every lifetime tick by tick was a millisecond a period.
      std::vector<std::size_t> load(static_cast<std::size_t>(last - first) + 1, 0);
      for (const Item& it : items) {
        load[it.begin - first] += it.bytes;
        load[it.end - first] -= it.bytes;
      }
      for (std::size_t t = 1; t < load.size(); ++t) load[t] += load[t - 1];
      const RangeMax highest(std::move(load));
      for (std::size_t i = 0; i < items.size(); ++i) {
        const int n = node_of_[p][i];
        if (items[i].begin < items[i].end)
          breadth[n] = std::max(breadth[n], highest(items[i].begin - first, items[i].end - first));
        life[n] = std::max(life[n], static_cast<std::size_t>(items[i].end - items[i].begin));
      }
    }
    std::vector<std::size_t> base(size());
    for (std::size_t i = 0; i < base.size(); ++i) base[i] = i;
    auto sorted = [&](auto before) {
      std::vector<std::size_t> order = base;
      std::stable_sort(order.begin(), order.end(), before);
      return order;
    };
    auto by_size = [&](std::size_t a, std::size_t b) { return bytes_[a] > bytes_[b]; };
    auto by_breadth = [&](std::size_t a, std::size_t b) {
      return breadth[a] != breadth[b] ? breadth[a] > breadth[b] : bytes_[a] > bytes_[b];
    };
    auto by_area = [&](std::size_t a, std::size_t b) {
      // long double: size × lifetime can pass 2^64 for huge blocks on a long clock.
      return static_cast<long double>(bytes_[a]) * static_cast<long double>(life[a]) >
             static_cast<long double>(bytes_[b]) * static_cast<long double>(life[b]);
    };
    std::vector<std::pair<std::vector<std::size_t>, bool>> orders;
    orders.emplace_back(sorted(by_size), true);
    orders.emplace_back(orders.back().first, false);
    orders.emplace_back(sorted(by_breadth), true);
    orders.emplace_back(sorted(by_area), true);
    return orders;
  }

  // Places the nodes in `order`, each into the best-fitting (or the lowest)
  // hole left by the obstacles and the placed nodes it conflicts with, or
  // above them all when no hole holds it. Nodes `fixed` gives an offset
  // stay there. Gives up (nothing) as soon as a node would end above
  // `limit`: such a layout does not fit the pool, whatever comes after.
  std::optional<std::vector<std::size_t>> place(const std::vector<std::size_t>& order,
                                                const std::vector<Interval>& obstacles, bool best_fit,
                                                const std::vector<std::optional<std::size_t>>& fixed,
                                                std::size_t limit) const {
    std::vector<std::size_t> offset(size(), 0);
    // The placed nodes in offset order, as the obstacles are: the intervals
    // a node must avoid are then a merge of two sorted lists, not a sort
    // per node. Each entry carries its node's span, so the scan for the
    // nodes it conflicts with reads one array.
    ByOffset placed;
    auto place_at = [&](std::size_t n, std::size_t at) {
      offset[n] = at;
      placed.insert({{at, at + bytes_[n]}, span_[n], static_cast<std::uint32_t>(n)});
    };
    for (std::size_t n = 0; n < size(); ++n)
      if (fixed[n]) {
        if (*fixed[n] + bytes_[n] > limit) return std::nullopt;
        place_at(n, *fixed[n]);
      }
    // The obstacles as disjoint ranges: touching and overlapping ones
    // merged (the parameters, allocated one after another, become a few).
    std::vector<Interval> merged(obstacles.begin(), obstacles.end()), conflicting, busy;
    std::sort(merged.begin(), merged.end());
    std::size_t kept = 0;
    for (const Interval& o : merged)
      if (kept > 0 && o.first <= merged[kept - 1].second)
        merged[kept - 1].second = std::max(merged[kept - 1].second, o.second);
      else
        merged[kept++] = o;
    merged.resize(kept);
    const bool spans_decide = plans_.size() == 1;
    for (std::size_t n : order) {
      if (fixed[n]) continue;
      // Every placed node is written and kept only if it overlaps: no
      // branch to mispredict in the loop that runs n²/2 times.
      conflicting.resize(placed.size());
      std::size_t found = 0;
      const Span life = span_[n];
      if (spans_decide)
        placed.for_each([&](const Placed& p) {
          conflicting[found] = p.range;
          found += static_cast<std::size_t>((p.span.begin < life.end) & (life.begin < p.span.end));
        });
      else
        placed.for_each([&](const Placed& p) {
          if (p.span.begin < life.end && life.begin < p.span.end && conflict(n, p.node)) conflicting[found++] = p.range;
        });
      busy.resize(merged.size() + found);
      std::merge(merged.begin(), merged.end(), conflicting.begin(), conflicting.begin() + static_cast<std::ptrdiff_t>(found),
                 busy.begin());
      std::size_t cursor = 0, chosen = std::numeric_limits<std::size_t>::max(), chosen_hole = chosen;
      for (const Interval& b : busy) {
        if (b.first > cursor) {
          const std::size_t hole = b.first - cursor;
          if (hole >= bytes_[n] && hole < chosen_hole) {
            chosen = cursor;
            chosen_hole = hole;
            if (!best_fit) break;
          }
        }
        cursor = std::max(cursor, b.second);
      }
      const std::size_t at = chosen == std::numeric_limits<std::size_t>::max() ? cursor : chosen;
      if (at + bytes_[n] > limit) return std::nullopt;
      place_at(n, at);
    }
    return offset;
  }

  // Each plan's footprint under a layout: the worst, then the total.
  std::pair<std::size_t, std::size_t> cost(const std::vector<std::size_t>& offset,
                                           const std::vector<Interval>& obstacles) const {
    std::size_t base = 0, worst = 0, total = 0;
    for (const Interval& o : obstacles) base = std::max(base, o.second);
    for (const std::vector<int>& nodes : node_of_) {
      std::size_t f = base;
      for (int n : nodes) f = std::max(f, offset[n] + bytes_[n]);
      worst = std::max(worst, f);
      total += f;
    }
    return {worst, total};
  }

  void apply(const std::vector<std::size_t>& offset, const std::vector<Interval>& obstacles) const {
    for (std::size_t p = 0; p < plans_.size(); ++p) {
      Plan& plan = *plans_[p];
      plan.obstacles = obstacles;
      plan.footprint = 0;
      for (const Interval& o : obstacles) plan.footprint = std::max(plan.footprint, o.second);
      for (std::size_t i = 0; i < node_of_[p].size(); ++i) {
        plan.offsets[i] = offset[node_of_[p][i]];
        plan.footprint = std::max(plan.footprint, plan.offsets[i] + plan.items[i].bytes);
      }
    }
  }

 private:
  struct Span {
    std::uint64_t begin, end;
  };
  struct Placed {
    Interval range;
    Span span;
    std::uint32_t node;
  };
  // Placed nodes sorted by range, in chunks: an insert moves one chunk, not
  // everything above it (one sorted vector moved ~70 MB per placement of a
  // resnet152 period).
  class ByOffset {
   public:
    void insert(const Placed& p) {
      ++size_;
      auto before = [](const Placed& a, const Placed& b) { return a.range < b.range; };
      auto chunk = std::lower_bound(chunks_.begin(), chunks_.end(), p,
                                    [&](const std::vector<Placed>& c, const Placed& x) { return before(c.back(), x); });
      if (chunk == chunks_.end()) {
        if (chunks_.empty() || chunks_.back().size() >= kChunk) {
          chunks_.emplace_back().reserve(2 * kChunk);
          chunks_.back().push_back(p);
          return;
        }
        chunk = std::prev(chunks_.end());
      }
      chunk->insert(std::upper_bound(chunk->begin(), chunk->end(), p, before), p);
      if (chunk->size() >= 2 * kChunk) {  // split in halves
        std::vector<Placed> upper(chunk->begin() + kChunk, chunk->end());
        upper.reserve(2 * kChunk);
        chunk->resize(kChunk);
        chunks_.insert(std::next(chunk), std::move(upper));
      }
    }
    std::size_t size() const { return size_; }
    template <class F>
    void for_each(F&& f) const {
      for (const std::vector<Placed>& c : chunks_)
        for (const Placed& p : c) f(p);
    }

   private:
    static constexpr std::size_t kChunk = 64;
    std::vector<std::vector<Placed>> chunks_;
    std::size_t size_ = 0;
  };

  std::vector<Plan*> plans_;
  std::vector<std::size_t> bytes_;
  std::vector<Span> span_;
  std::vector<std::uint32_t> mask_, depth_;
  std::vector<std::vector<int>> node_of_;  // per plan, per request
};

// The layouts the orderings give with nothing fixed depend only on the
// periods' requests and lifetimes and on the obstacles. The planner
// replays one schedule through a fresh pool many times (its pool searches
// and parking checks), and each pool learns and places the same period:
// the last few results are kept, for every pool in the process, so that
// such a period is placed once (the same layouts either way). A layout
// given up above a limit is kept as nothing, and the layouts answer only a
// placement whose limit is no higher (there it would be given up again).
class OrderingLayouts {
 public:
  struct Periods {
    std::vector<std::vector<Key>> keys;
    std::vector<std::vector<Item>> items;
    std::vector<Interval> obstacles;
    bool operator==(const Periods&) const = default;
  };
  using Layouts = std::vector<std::optional<std::vector<std::size_t>>>;

  static Periods of(const std::vector<Plan*>& plans, const std::vector<Interval>& obstacles) {
    Periods p{{}, {}, obstacles};
    for (const Plan* plan : plans) {
      p.keys.push_back(plan->keys);
      p.items.push_back(plan->items);
    }
    return p;
  }
  std::optional<Layouts> find(const Periods& p, std::size_t limit) {
    const std::lock_guard lock(mutex_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->periods == p) {
        const bool whole = std::all_of(it->layouts.begin(), it->layouts.end(), [](const auto& l) { return l.has_value(); });
        if (!whole && limit > it->limit) return std::nullopt;
        kept_.splice(kept_.begin(), kept_, it);
        return it->layouts;
      }
    return std::nullopt;
  }
  void keep(Periods p, Layouts layouts, std::size_t limit) {
    const std::lock_guard lock(mutex_);
    for (auto it = kept_.begin(); it != kept_.end(); ++it)
      if (it->periods == p) {  // placed before under a lower limit, or by another thread meanwhile
        kept_.erase(it);
        break;
      }
    kept_.push_front({std::move(p), std::move(layouts), limit});
    if (kept_.size() > kKept) kept_.pop_back();
  }
  void clear() {
    const std::lock_guard lock(mutex_);
    kept_.clear();
  }

 private:
  // A row of `plan` places about a dozen distinct periods, and `plan`
  // plans a row per core at once.
  static constexpr std::size_t kKept = 32;
  struct Kept {
    Periods periods;
    Layouts layouts;
    std::size_t limit;  // what the layouts that are nothing were given up above
  };
  std::mutex mutex_;
  std::list<Kept> kept_;  // most recently used first
};

OrderingLayouts& ordering_layouts() {
  static OrderingLayouts kept;
  return kept;
}

// Places the plans jointly around `obstacles`: the smallest of the
// candidate layouts (the worst plan's footprint first, then the total).
// With `keep_current` (the plans were placed, or recorded, around these
// same obstacles) the candidates include the layout they have, and layouts
// that keep the other plans where they are and place only the first (the
// new) plan's own blocks. Returns false, and leaves the plans as they were,
// if the smallest layout's footprint passes `limit` (the pool's size):
// each ordering is given up as soon as it passes it, which is most of the
// work saved when a pool search replays the schedule in too small a pool.
bool place_jointly(const std::vector<Plan*>& plans, const std::vector<Interval>& obstacles, bool keep_current,
                   std::size_t limit) {
  const Group g(plans);
  std::optional<std::vector<std::size_t>> best;
  std::pair<std::size_t, std::size_t> best_cost{std::numeric_limits<std::size_t>::max(), 0};
  auto consider = [&](const std::optional<std::vector<std::size_t>>& offset) {
    if (!offset) return;  // given up above the limit: it would not have been chosen
    const auto c = g.cost(*offset, obstacles);
    if (!best || c < best_cost) {
      best = offset;
      best_cost = c;
    }
  };
  if (keep_current)
    if (auto now = g.current()) {
      std::vector<std::size_t> offset(g.size());
      for (std::size_t n = 0; n < offset.size(); ++n) offset[n] = now->at(n).value_or(0);
      consider(std::move(offset));
    }
  if (g.size() <= kMaxOfflineBlocks || !best) {
    const std::vector<std::optional<std::size_t>> none(g.size());
    const auto others = keep_current && plans.size() > 1 ? g.current(1) : std::nullopt;
    OrderingLayouts::Periods periods = OrderingLayouts::of(plans, obstacles);
    const std::optional<OrderingLayouts::Layouts> kept = ordering_layouts().find(periods, limit);
    if (kept && !others) {
      for (const auto& layout : *kept) consider(layout);  // no orderings to make
    } else {
      // Each ordering is placed on a thread of its own where the group is
      // large enough to pay for one (Group::place only reads the group);
      // the layouts are considered in the same order either way.
      const auto orders = g.orderings();
      std::vector<std::future<std::optional<std::vector<std::size_t>>>> placing;
      if (!kept && g.size() >= kPlaceOnThreadsFrom) try {
          for (const auto& ordering : orders)  // (clang 14 cannot capture a structured binding)
            placing.push_back(std::async(std::launch::async, [&g, &ordering, &obstacles, &none, limit] {
              return g.place(ordering.first, obstacles, ordering.second, none, limit);
            }));
        } catch (const std::system_error&) {
          placing.clear();  // no thread to be had (a process limit): placed here, one after another
        }
      OrderingLayouts::Layouts layouts;
      for (const auto& [order, best_fit] : orders) {
        const std::size_t i = layouts.size();
        layouts.push_back(kept              ? (*kept)[i]
                          : placing.empty() ? g.place(order, obstacles, best_fit, none, limit)
                                            : placing[i].get());
        consider(layouts.back());
        if (others) consider(g.place(order, obstacles, best_fit, *others, limit));
      }
      if (!kept) ordering_layouts().keep(std::move(periods), std::move(layouts), limit);
    }
  }
  if (!best || best_cost.first > limit) return false;
  g.apply(*best, obstacles);
  return true;
}

class SmartPoolAllocator final : public Allocator {
 public:
  explicit SmartPoolAllocator(std::size_t pool_bytes) : pool_bytes_(pool_bytes), holes_(pool_bytes) {}

  std::string_view name() const override { return "smartpool"; }

  std::optional<std::size_t> allocate(const AllocRequest& r) override {
    const Key key{std::max(round_up(r.bytes), kAllocGranularity), r.tensor};
    ++clock_;
    if (active_ != plans_.end())
      if (auto offset = serve(key)) return offset;
    if (active_ == plans_.end()) {
      learn_at(key);
      if (active_ != plans_.end())
        if (auto offset = serve(key)) return offset;
    }
    auto offset = holes_.take_best_fit(key.bytes);
    if (!offset) return std::nullopt;
    add_live(*offset, key.bytes, record(key, *offset));
    return offset;
  }

  void free(std::size_t offset) override {
    const LiveBlocks::Live l = live_.remove(offset);  // throws for an offset that is not live
    ++clock_;
    holes_.give_back(offset, l.bytes);
    if (l.tag >= 0) {
      record_[l.tag].end = clock_;
      while (max_live_ >= 0 && record_[max_live_].end != 0) --max_live_;  // each index passed once
    }
    // Suffix minima of the freed blocks' record indices, by clock: the
    // smallest index freed after any moment is the first entry past it.
    while (!frees_.empty() && frees_.back().second >= l.tag) frees_.pop_back();
    frees_.emplace_back(clock_, l.tag);
  }

  PoolStats stats() const override {
    PoolStats s;
    s.pool_bytes = pool_bytes_;
    s.load_bytes = live_.load_bytes();
    s.extent_bytes = live_.extent_bytes();
    s.largest_free_block_bytes = holes_.largest();
    s.free_holes = holes_.count();
    return s;
  }

 private:
  using PlanRef = std::list<Plan>::iterator;
  struct Recorded {
    Key key;
    std::size_t offset;
    std::uint64_t begin, end;  // end 0: still live
  };

  void add_live(std::size_t offset, std::size_t bytes, int rec) {
    live_.add(offset, bytes, rec);  // tagged with its index in the record
  }

  // Serving: the next request of the active plan's period. Returns nothing
  // when the request leaves every remembered plan (active_ is cleared) or
  // its range is blocked (the caller falls back to best fit).
  std::optional<std::size_t> serve(const Key& key) {
    if (pos_ == active_->keys.size()) {  // the period was served to its end: a new one begins
      clear_record();
      auto next = active_->keys.front() == key ? active_ : find_plan(key);
      if (next == plans_.end()) {
        active_ = plans_.end();
        return std::nullopt;  // an unknown period: learn it
      }
      activate(next);
      if (!begin_period()) return std::nullopt;
    }
    if (!(active_->keys[pos_] == key)) {
      // Another remembered period with the same beginning may go on here.
      auto other = branch(key);
      if (other == plans_.end()) {
        active_ = plans_.end();
        rebuild_seen();
        return std::nullopt;  // departs from every plan: learn again, this period's start included
      }
      active_ = other;
      plans_.splice(plans_.begin(), plans_, active_);
    }
    const std::size_t offset = active_->offsets[pos_++];
    if (!holes_.take_at(offset, key.bytes)) {
      disturbed_ = true;
      return std::nullopt;
    }
    add_live(offset, key.bytes, record(key, offset));
    return offset;
  }

  // A remembered plan whose period began like the active one — the same
  // requests at the same offsets around the same obstacles up to pos_ —
  // and goes on with `key`: a training and an evaluation iteration share
  // their first layers' requests and part only later.
  PlanRef branch(const Key& key) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if (it == active_ || it->keys.size() <= pos_ || !(it->keys[pos_] == key) ||
          it->obstacles != active_->obstacles)
        continue;
      bool same = true;
      for (std::size_t i = 0; same && i < pos_; ++i)
        same = it->keys[i] == active_->keys[i] && it->offsets[i] == active_->offsets[i];
      if (same) return it;
    }
    return plans_.end();
  }

  void activate(PlanRef plan) {
    active_ = plan;
    pos_ = 0;
    plans_.splice(plans_.begin(), plans_, active_);  // most recently used first
    seen_.clear();
  }

  // A period begins: re-place it (with the periods it shares blocks with)
  // if the live blocks are no longer the ones it was placed around, or a
  // lookup was blocked last time. A plan that no longer fits the pool is
  // forgotten and learning starts again (false).
  bool begin_period() {
    pos_ = 0;
    std::vector<Interval> now = live_intervals();
    if (disturbed_ || now != active_->obstacles) {
      disturbed_ = false;
      if (!place_jointly(group_of(*active_), now, /*keep_current=*/false, pool_bytes_)) {
        plans_.erase(active_);
        active_ = plans_.end();
        return false;
      }
    }
    return true;
  }

  // The remembered plans placed together with `plan`: those beginning with
  // the same request around the same obstacles (it first).
  std::vector<Plan*> group_of(Plan& plan) {
    std::vector<Plan*> group{&plan};
    for (Plan& other : plans_)
      if (&other != &plan && other.keys.front() == plan.keys.front() && other.obstacles == plan.obstacles)
        group.push_back(&other);
    return group;
  }

  // Learning: called for a request while no plan is active. Activates a
  // plan when this request opens a period.
  void learn_at(const Key& key) {
    if (auto seen = seen_.find(key); seen != seen_.end()) {
      // The latest earlier request with this key that opens a closed
      // episode (in an offloading schedule the latest is often a prefetch
      // of the same tensor, the one before it the period's start).
      const std::vector<int>& at = seen->second;
      for (std::size_t n = 0; n < at.size() && n < kCandidates; ++n) {
        const int k = at[at.size() - 1 - n];
        if (!closed_since(k)) continue;
        if (auto plan = remember(record_window(k)); plan != plans_.end()) {
          clear_record();
          activate(plan);
          disturbed_ = false;
          return;
        }
        break;
      }
    }
    if (find_plan(key) == plans_.end()) return;
    // A remembered period begins: what was recorded before it is a period too.
    if (!record_.empty() && closed_since(0)) remember(record_window(0));
    clear_record();
    auto known = find_plan(key);  // again: remembering may have dropped it from a full library
    if (known == plans_.end()) return;
    activate(known);
    if (!begin_period()) active_ = plans_.end();
  }

  // Whether the window from recorded request k to now is a closed episode:
  // everything allocated in it freed, nothing allocated before it freed in it.
  bool closed_since(int k) const {
    if (max_live_ >= k) return false;
    const std::uint64_t begin = record_[k].begin;
    auto first_after = std::upper_bound(frees_.begin(), frees_.end(), begin,
                                        [](std::uint64_t t, const auto& f) { return t < f.first; });
    return first_after == frees_.end() || first_after->second >= k;
  }

  // Adds a period to the library, replacing one with the same requests and
  // dropping the least recently used (never the active one), and places it
  // jointly with the periods that begin like it. Returns it, or end() (and
  // the library as it was) if the placement does not fit the pool.
  PlanRef remember(Plan plan) {
    if (plan.keys.empty()) return plans_.end();
    for (auto it = plans_.begin(); it != plans_.end(); ++it)
      if (it != active_ && it->keys == plan.keys) {
        plans_.erase(it);
        break;
      }
    plans_.push_front(std::move(plan));
    if (!place_jointly(group_of(plans_.front()), plans_.front().obstacles, /*keep_current=*/true, pool_bytes_)) {
      plans_.pop_front();
      return plans_.end();
    }
    if (plans_.size() > kLibrary) {
      auto victim = std::prev(plans_.end());
      if (victim == active_) --victim;
      plans_.erase(victim);
    }
    return plans_.begin();
  }

  // The recorded requests k.. as a period, laid out where they went (best
  // fit's layout, or a plan's for requests it served), around the blocks
  // live now.
  Plan record_window(int k) const {
    Plan plan;
    for (std::size_t i = static_cast<std::size_t>(k); i < record_.size(); ++i) {
      const Recorded& r = record_[i];
      plan.keys.push_back(r.key);
      plan.items.push_back({r.key.bytes, r.begin, r.end});
      plan.offsets.push_back(r.offset);
    }
    plan.obstacles = live_intervals();
    return plan;
  }

  // The most recently used plan whose period begins with `first`.
  PlanRef find_plan(const Key& first) {
    for (auto it = plans_.begin(); it != plans_.end(); ++it)
      if (it->keys.front() == first) return it;
    return plans_.end();
  }

  std::vector<Interval> live_intervals() const {
    std::vector<Interval> v;
    v.reserve(live_.blocks().size());
    for (const LiveBlocks::Live& b : live_.blocks()) v.emplace_back(b.offset, b.offset + b.bytes);
    return v;
  }

  // Every request is recorded, since the current period began while a plan
  // serves (so a period that parts from it is learned whole), since
  // learning began otherwise. The index of requests by key is kept only
  // while learning.
  int record(const Key& key, std::size_t offset) {
    if (record_.size() >= kMaxRecord) clear_record();
    const int rec = static_cast<int>(record_.size());
    record_.push_back({key, offset, clock_, 0});
    max_live_ = rec;
    if (active_ == plans_.end()) seen_[key].push_back(rec);
    return rec;
  }

  void rebuild_seen() {
    seen_.clear();
    for (std::size_t i = 0; i < record_.size(); ++i) seen_[record_[i].key].push_back(static_cast<int>(i));
  }

  // Forgets the history; blocks it recorded that are still live become
  // blocks from before the record (index -1).
  void clear_record() {
    for (const Recorded& r : record_)
      if (r.end == 0) live_.find(r.offset)->tag = -1;
    record_.clear();
    seen_.clear();
    frees_.clear();
    max_live_ = -1;
  }

  std::size_t pool_bytes_;
  FreeList holes_;
  LiveBlocks live_;  // tagged with their index in the record (-1: not recorded)
  std::uint64_t clock_ = 0;

  std::vector<Recorded> record_;
  std::unordered_map<Key, std::vector<int>, KeyHash> seen_;  // while learning: the recorded requests by key
  int max_live_ = -1;                                       // the highest recorded index still live
  std::vector<std::pair<std::uint64_t, int>> frees_;        // (clock, record index) suffix minima of frees

  std::list<Plan> plans_;  // most recently used first
  PlanRef active_ = plans_.end();
  std::size_t pos_ = 0;  // the next request of the active period
  bool disturbed_ = false;
};

}  // namespace

void forget_smartpool_layouts() { ordering_layouts().clear(); }

std::unique_ptr<Allocator> make_smartpool_allocator(std::size_t pool_bytes) {
  return std::make_unique<SmartPoolAllocator>(pool_bytes);
}

}  // namespace tidepool
