#include "engine/memory/paper_sequences.h"

#include <string>
#include <utility>

namespace tidepool {
namespace {

// Builds a trace and its labels together so the two never drift apart.
class SequenceWriter {
 public:
  explicit SequenceWriter(std::size_t unit_bytes) : unit_(unit_bytes) {}

  void alloc(std::int64_t id, std::size_t units, std::string label) {
    trace_.push_back({TraceEvent::Kind::alloc, id, units * unit_, false});
    labels_.push_back(std::move(label));
  }
  // A size given in granules, for sequences whose sizes are fractions of a unit.
  void alloc_granules(std::int64_t id, std::size_t granules, std::string label) {
    trace_.push_back({TraceEvent::Kind::alloc, id, granules * kAllocGranularity, false});
    labels_.push_back(std::move(label));
  }
  void release(std::int64_t id, std::string label) {
    trace_.push_back({TraceEvent::Kind::free, id, 0, false});
    labels_.push_back(std::move(label));
  }

  void finish(PaperSequence& s) && {
    s.unit_bytes = unit_;
    s.trace = std::move(trace_);
    s.event_labels = std::move(labels_);
  }

 private:
  std::size_t unit_;
  AllocTrace trace_;
  std::vector<std::string> labels_;
};

}  // namespace

PaperSequence nine_versus_eleven() {
  constexpr std::size_t U = kAllocGranularity;
  PaperSequence s;
  s.name = "nine-versus-eleven";
  s.title = "vDNN++ §IV-B: best fit serves this sequence in 9 units but not in 11";
  s.explanation =
      "vDNN++ sizes CNMeM's pool by simulation: start at the peak load (9 units here), replay the "
      "requests, and when one fails grow the pool by what it lacked and start again. This sequence "
      "shows why the answer cannot be found by bisection, and why a search that starts too high can "
      "end above a size that works: more room can make best fit worse. In a 9-unit pool A3 leaves a "
      "1-unit tail, the smallest hole, so A4 goes there; once A1 and A3 are freed the bottom 8 units "
      "are one block and A5(8) fits. In this 11-unit pool the tail is 3 units, so the 2-unit hole D2 "
      "left is now the smallest and A4 lands in the middle: after D1 and D3, 10 units are free as "
      "two blocks of 5, and A5(8) fails. Watch where A4 goes under each heuristic, and the largest "
      "free block at the last step. CNMeM is given the whole 11 units as its initial pool, the "
      "paper's setting, so it is best fit and fails the same way.";
  SequenceWriter w(U);
  w.alloc(1, 5, "A1(5)");
  w.alloc(2, 2, "A2(2)");
  w.alloc(3, 1, "A3(1)");
  w.release(2, "D2");
  w.alloc(4, 1, "A4(1)");
  w.release(1, "D1");
  w.release(3, "D3");
  w.alloc(5, 8, "A5(8)");
  std::move(w).finish(s);
  s.pool_bytes = 11 * U;
  s.cnmem_initial_pool_bytes = 11 * U;
  return s;
}

PaperSequence unavoidable_fragmentation() {
  // a1j = 1 unit, a2j = 1/3, a3j = 2/3, a4j = 2: with a unit of three
  // granules every size is a whole number of granules.
  constexpr std::size_t kThird = kAllocGranularity;
  constexpr std::size_t U = 3 * kThird;
  PaperSequence s;
  s.name = "unavoidable-fragmentation";
  s.title = "vDNN++ §III-B: a sequence no placement serves at its peak load";
  s.explanation =
      "Block i allocates one a_ij for every later release d_j (j >= i), all of one size: 1 unit for "
      "block 1, 1/3 for block 2, 2/3 for block 3, 2 units for block 4; d_j frees every a_ij still "
      "live. The sizes are chosen so that the load is exactly 4 units just before every d_j, so the "
      "peak load is 4 units. Yet no allocator that never moves a block can serve it in 4 units: "
      "block 3 fits only if the blocks d2 freed lie next to each other, block 4 only if those d3 "
      "freed do, and the paper shows that no placement keeps every such group contiguous. "
      "Step through the d_j and watch the freed space: somewhere it comes back as two holes "
      "separated by a block that is still live, and the next block has to go above them. Every "
      "heuristic's footprint ends above 4 units (a competitive ratio above 1); exact reports 4 "
      "because it stands for the ideal of one cudaMalloc per tensor, though the best-fit offsets it "
      "draws need the same room as best fit.";
  SequenceWriter w(U);
  // Granules per a_ij of block i (index 0 unused).
  const std::size_t granules[5] = {0, 3, 1, 2, 6};
  auto id = [](int i, int j) { return std::int64_t{10 * i + j}; };
  // The paper's names: i and j are single digits. (Built by appending:
  // GCC 12 warns falsely about "literal" + std::string chains here.)
  auto digit = [](int n) { return static_cast<char>('0' + n); };
  auto name = [&](int i, int j) { return std::string{'a', digit(i), digit(j)}; };
  for (int i = 1; i <= 4; ++i) {
    for (int j = i; j <= 4; ++j) w.alloc_granules(id(i, j), granules[i], name(i, j));
    for (int b = 1; b <= i; ++b) {
      std::string label{'d', digit(i)};
      label += ": free ";
      label += name(b, i);
      w.release(id(b, i), std::move(label));
    }
  }
  std::move(w).finish(s);
  // Room for every heuristic to serve it, so the footprints can be
  // compared: in 18 thirds each ends at 14, two thirds above the peak load
  // (exact aside, which reports the ideal).
  s.pool_bytes = 18 * kThird;
  // CNMeM as vDNN++'s Table II sets it up: the initial pool is the peak
  // load, and fragmentation makes it claim more.
  s.cnmem_initial_pool_bytes = 4 * U;
  return s;
}

PaperSequence cnmem_figure7() {
  constexpr std::size_t U = kAllocGranularity;
  PaperSequence s;
  s.name = "cnmem-figure-7";
  s.title = "vDNN++ Fig. 7: CNMeM claims a new pool the size of the request";
  s.explanation =
      "CNMeM starts from an initial pool (600 MB in the figure, 6 units here: a unit stands for "
      "100 MB) and places requests best fit inside it. After blocks of 1, 2 and 3 units are placed "
      "and the 1 and the 3 are freed, 4 units are free, but as a 1-unit hole at the bottom and 3 "
      "units at the top of the pool, so a 4-unit request fits nowhere. CNMeM then cudaMallocs a new "
      "pool of exactly 4 units above the first, and pools never merge: the footprint becomes 10 "
      "units for a load that never exceeds 6. Had the pools merged, the 3 free units at the top of "
      "the first plus one more would have served it: best fit in one growing range needs 7. Look at "
      "the last step: cnmem's block starts where its first pool ends while the 3 free units below "
      "it stay unused; the single-pool heuristics put it straight into them.";
  SequenceWriter w(U);
  w.alloc(1, 1, "A1(1)");
  w.alloc(2, 2, "A2(2)");
  w.alloc(3, 3, "A3(3)");
  w.release(1, "D1");
  w.release(3, "D3");
  w.alloc(4, 4, "A4(4)");
  std::move(w).finish(s);
  s.pool_bytes = 12 * U;
  s.cnmem_initial_pool_bytes = 6 * U;
  return s;
}

std::vector<PaperSequence> paper_sequences() {
  return {nine_versus_eleven(), unavoidable_fragmentation(), cnmem_figure7()};
}

}  // namespace tidepool
