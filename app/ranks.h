// The ranks of a `--batch` run that mpirun started, as the command line
// sees them (the training itself is app/session.h's):
//
//   mpirun -np 2 tidepool --batch --model resnet20 --batch-size 128
//
// Rank 0 writes the run folder and prints; every other rank prints nothing
// but its errors, and writes only its own trace and memory-load files
// (app/run_folder.h). An error on any rank stops them all: the rank that
// met it says what it was and aborts the job, and mpirun names it.
#pragma once

#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include "app/checkpoint.h"
#include "engine/comm/communicator.h"

namespace tidepool::app {

// The ranks this process is one of: MPI's when mpirun started it with
// more than one rank; null for a process on its own (or `mpirun -np 1`).
// Throws CommError when mpirun started it but this build has no MPI.
std::unique_ptr<Communicator> join_ranks();

// The checkpoint in `file`, read by rank 0 and sent to the others, so
// that ranks on other machines resume without the run folder (only rank
// 0 writes it). Every rank throws the same CheckpointError when it is
// missing or corrupt.
Checkpoint load_checkpoint_on_ranks(const std::filesystem::path& file, Communicator* comm);

// "rank 1 of 2: " on a rank of a data-parallel run, "" otherwise: the
// start of an error message, so a user sees which process said it.
std::string rank_prefix(const Communicator* comm);

// Stops every rank after an error this one met: MPI_Abort, whose message
// from mpirun names this rank. Returns only where there are no other
// ranks to stop.
void stop_all_ranks(Communicator* comm, int status);

// A failure the user can act on: "tidepool: [rank N of M: ]error: <what>"
// on stderr, the other ranks stopped (`comm`: null on its own); returns
// exit status 1.
int report_failure(const std::exception& e, Communicator* comm);

}  // namespace tidepool::app
