// Teaching scenario: compute/transfer overlap. vDNN++'s constructed network
// with every layer's input offloaded over a throttled link, first with vDNN's
// synchronous transfers (each layer waits for its copies: red stalls in the
// timeline), then vDNN++'s asynchronous ones (backward's prefetches hide
// under compute and its stalls shrink). The link is set from the first iteration so
// that the copies take a little over half the forward pass's compute time
// on this machine (ui/scene/overlap.h).
#pragma once

#include <vector>

#include "ui/scene/overlap.h"
#include "ui/views/view.h"

namespace tidepool::ui {

class OverlapView {
 public:
  void draw(const Frame& frame);
  // Starts the scenario (as its button does).
  void start(SessionLink& link);
  // The session was started with the scenario's settings (--overlap-scenario):
  // measure its first iteration and set the link, as start() does.
  void adopt();
  // The link is set from this machine's compute and an iteration trained
  // with it is on show: the stalls the scenario teaches are there to see,
  // whatever the first iteration looked like.
  bool settled() const { return !calibrating_ && shown_ >= settles_at_; }

 private:
  float link_gbps_ = static_cast<float>(OverlapScenario::first_link_gbps);
  bool calibrating_ = false;  // started; the link is set after its first iteration
  std::int64_t settles_at_ = 0;  // the first iteration trained with the link set
  std::int64_t shown_ = -1;      // the newest iteration on the timeline
};

}  // namespace tidepool::ui
