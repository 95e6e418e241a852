// How the tests start ranks: `mpirun -np N ` before a command.
#pragma once

#include <string>

namespace tidepool::testing {

// As root (which CI is; Open MPI refuses unless told), on more ranks than
// cores, and without LeakSanitizer in the ranks of a sanitizer build: Open
// MPI keeps what its components allocate past MPI_Finalize, in libraries
// it has unloaded by then, where no suppression can name them. Our own
// leaks are checked by the tests that run ranks as threads (LocalGroup).
inline std::string mpirun(int ranks) {
  return "mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS=detect_leaks=0 -np " + std::to_string(ranks) +
         " ";
}

}  // namespace tidepool::testing
