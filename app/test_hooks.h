// Hooks for the tests that run the real binary (tests/app/mpirun_test.cpp):
// each is read from an environment variable named TIDEPOOL_TEST_..., here
// and nowhere else, and changes nothing unless its variable is set. They
// exist so that a test can make a run go wrong in a way no user option can,
// and check that the run notices; a run they changed says so on stderr.
#pragma once

namespace tidepool::app {

class TrainingSession;

namespace test_hooks {

// TIDEPOOL_TEST_PERTURB_RANK=R: rank R of a data-parallel --batch run moves
// one parameter by its last bit after the first iteration it trains, so
// the ranks no longer hold one model. The run must then stop at its next
// check (TrainingSession::check_ranks_agree) naming rank R. Nothing happens
// on other ranks, on one process, or on a device that computes no values.
// Call after every trained iteration; it acts once.
void perturb_parameters_after_first_iteration(TrainingSession& session);

}  // namespace test_hooks
}  // namespace tidepool::app
