#include "engine/device/device.h"

#include "engine/comm/communicator.h"

namespace tidepool {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::compute: return "compute";
    case Stream::offload: return "offload";
    case Stream::prefetch: return "prefetch";
    case Stream::comm: return "comm";
  }
  return "?";
}

// The default for a device whose memory the host can address: the host
// all-reduce, in the stream's order, on the stream's host thread.
void Device::all_reduce(Stream stream, float* data, std::size_t count, Communicator& comm) {
  host_task(stream, [data, count, &comm] { comm.all_reduce_sum(data, count); });
}

void Device::all_reduce(Stream stream, double* data, std::size_t count, Communicator& comm) {
  host_task(stream, [data, count, &comm] { comm.all_reduce_sum(data, count); });
}

}  // namespace tidepool
