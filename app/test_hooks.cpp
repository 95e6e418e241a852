#include "app/test_hooks.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/session.h"

namespace tidepool::app::test_hooks {

void perturb_parameters_after_first_iteration(TrainingSession& session) {
  static bool done = false;  // once per process: a process is one rank
  if (done) return;
  done = true;
  const char* rank = std::getenv("TIDEPOOL_TEST_PERTURB_RANK");
  if (!rank || session.ranks() < 2 || std::to_string(session.rank()) != rank) return;
  std::vector<float> state = session.trainer().read_state();
  if (state.empty()) return;  // the sim device: no parameters were computed
  state[0] = std::nextafter(state[0], state[0] < 0 ? 0.0f : -1.0f);  // one ulp: whatever it was, it changes
  session.trainer().write_state(state);
  std::fprintf(stderr, "tidepool: test hook TIDEPOOL_TEST_PERTURB_RANK: rank %d moved its first parameter by one ulp\n",
               session.rank());
}

}  // namespace tidepool::app::test_hooks
