// Teaching scenario: compute/transfer overlap. vDNN++'s constructed network
// with every layer's input offloaded over a throttled link, first with vDNN's
// synchronous transfers (each layer waits for its copies: red stalls in the
// timeline), then vDNN++'s asynchronous ones (the copies hide under compute
// and the stalls disappear).
#pragma once

#include <vector>

#include "ui/views/view.h"

namespace tidepool::ui {

class OverlapView {
 public:
  void draw(const Frame& frame);

 private:
  float link_gbps_ = 1.0f;
  bool started_ = false;
};

}  // namespace tidepool::ui
