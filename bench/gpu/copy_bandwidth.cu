// Plain pinned-memory copy throughput, the ceiling Tidepool's offload and
// prefetch streams are compared against in bench/gpu/run.sh.
//
// For each size: host->device and device->host alone (cudaMemcpyAsync on
// one stream, pinned host memory from cudaHostAlloc), then both directions
// at once on two streams (what overlapping offloads and prefetches do).
// The best of several repetitions, timed with CUDA events. Prints a table
// on stderr and, as the last line on stdout, one JSON object with the
// figures for the largest sizes (what the benchmark script reads).
//
//   nvcc -O2 -o copy_bandwidth bench/gpu/copy_bandwidth.cu && ./copy_bandwidth
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

void check(cudaError_t status, const char* call) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "copy_bandwidth: %s: %s\n", call, cudaGetErrorString(status));
  std::exit(1);
}
#define CHECK(fn, ...) check(fn(__VA_ARGS__), #fn)

struct Buffers {
  void* host_a = nullptr;
  void* host_b = nullptr;
  void* dev_a = nullptr;
  void* dev_b = nullptr;
};

// Milliseconds for one round of the copies, measured between events on
// the first stream after the second has joined it.
float time_round(const Buffers& b, std::size_t bytes, bool h2d, bool d2h, cudaStream_t s1,
                 cudaStream_t s2, cudaEvent_t start, cudaEvent_t stop, cudaEvent_t joined) {
  CHECK(cudaEventRecord, start, s1);
  CHECK(cudaStreamWaitEvent, s2, start, 0);
  if (h2d) CHECK(cudaMemcpyAsync, b.dev_a, b.host_a, bytes, cudaMemcpyHostToDevice, s1);
  if (d2h) CHECK(cudaMemcpyAsync, b.host_b, b.dev_b, bytes, cudaMemcpyDeviceToHost, s2);
  CHECK(cudaEventRecord, joined, s2);
  CHECK(cudaStreamWaitEvent, s1, joined, 0);
  CHECK(cudaEventRecord, stop, s1);
  CHECK(cudaEventSynchronize, stop);
  float ms = 0;
  CHECK(cudaEventElapsedTime, &ms, start, stop);
  return ms;
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::fprintf(stderr, "copy_bandwidth: no CUDA device\n");
    return 1;
  }
  cudaDeviceProp props{};
  CHECK(cudaGetDeviceProperties, &props, 0);
  const std::vector<std::size_t> sizes = {std::size_t{1} << 20, std::size_t{4} << 20,
                                          std::size_t{16} << 20, std::size_t{64} << 20,
                                          std::size_t{256} << 20};
  const std::size_t largest = sizes.back();
  Buffers b;
  CHECK(cudaHostAlloc, &b.host_a, largest, cudaHostAllocDefault);
  CHECK(cudaHostAlloc, &b.host_b, largest, cudaHostAllocDefault);
  CHECK(cudaMalloc, &b.dev_a, largest);
  CHECK(cudaMalloc, &b.dev_b, largest);
  CHECK(cudaMemset, b.dev_b, 1, largest);
  std::fill(static_cast<char*>(b.host_a), static_cast<char*>(b.host_a) + largest, 1);
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags, &s1, cudaStreamNonBlocking);
  CHECK(cudaStreamCreateWithFlags, &s2, cudaStreamNonBlocking);
  cudaEvent_t start, stop, joined;
  CHECK(cudaEventCreate, &start);
  CHECK(cudaEventCreate, &stop);
  CHECK(cudaEventCreate, &joined);

  std::fprintf(stderr, "pinned cudaMemcpyAsync on %s (GB/s = 1e9 bytes/s)\n", props.name);
  std::fprintf(stderr, "%10s %10s %10s %18s\n", "MiB", "H2D", "D2H", "both (each dir)");
  double h2d_best = 0, d2h_best = 0, both_best = 0;
  for (std::size_t bytes : sizes) {
    double gbps[3] = {0, 0, 0};
    const bool dirs[3][2] = {{true, false}, {false, true}, {true, true}};
    for (int kind = 0; kind < 3; ++kind) {
      time_round(b, bytes, dirs[kind][0], dirs[kind][1], s1, s2, start, stop, joined);  // warm-up
      float best = 1e30f;
      for (int rep = 0; rep < 10; ++rep)
        best = std::min(
            best, time_round(b, bytes, dirs[kind][0], dirs[kind][1], s1, s2, start, stop, joined));
      gbps[kind] = static_cast<double>(bytes) / (best * 1e-3) / 1e9;
    }
    std::fprintf(stderr, "%10zu %10.1f %10.1f %18.1f\n", bytes >> 20, gbps[0], gbps[1], gbps[2]);
    // The figures that matter for activations (megabytes each): the
    // largest sizes, where per-copy overheads no longer count.
    if (bytes >= (std::size_t{16} << 20)) {
      h2d_best = std::max(h2d_best, gbps[0]);
      d2h_best = std::max(d2h_best, gbps[1]);
      both_best = std::max(both_best, gbps[2]);
    }
  }
  std::printf(
      "{\"gpu\": \"%s\", \"h2d_gbps\": %.3f, \"d2h_gbps\": %.3f, \"bidirectional_gbps_each\": "
      "%.3f}\n",
      props.name, h2d_best, d2h_best, both_best);

  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaEventDestroy(joined);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  cudaFree(b.dev_a);
  cudaFree(b.dev_b);
  cudaFreeHost(b.host_a);
  cudaFreeHost(b.host_b);
  return 0;
}
