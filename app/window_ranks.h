// The window on a data-parallel run: `mpirun -np 2 tidepool --model ...`.
//
// Rank 0 opens the window and trains with it (app/session_runner.h); every
// other rank trains headless in lockstep, following rank 0's turns: what
// the window asks of rank 0 (train one more iteration, apply new memory
// settings, start over with a teaching scenario's, stop) is sent to every
// rank as a turn before rank 0 does it, so all ranks make the same
// all-reduces in the same order. A rank waits for its next turn without
// spinning (the window may be paused for minutes).
//
// The other ranks' events reach the window through an EventForwarder
// (engine/observe/rank_events.h): a few times a second, never holding
// training up. The window's Rank menu shows any rank's timeline, address
// map and memory load.
#pragma once

#include <optional>

#include "engine/comm/communicator.h"
#include "engine/run/run_settings.h"

namespace tidepool::app {

inline constexpr int kTurnTag = 0x7e02;

struct Turn {
  enum class Kind : std::uint8_t {
    train,    // train the next iteration (and evaluate when it ends an epoch)
    apply,    // apply settings.memory, as rank 0 did (between iterations)
    restart,  // start over with `settings`
    stop,     // the window closed: end
  };
  Kind kind = Kind::train;
  RunSettings settings;  // apply: its memory settings; restart: the run
};

// Rank 0: sends `turn` to every other rank.
void send_turn(Communicator& comm, const Turn& turn);
// Another rank: the next turn from rank 0, waiting for it as long as it
// takes. Throws CommError when a message is not a turn.
Turn next_turn(Communicator& comm);

// Another rank's whole part in a window run: trains `settings` as rank 0's
// turns say, forwarding its events, until the stop turn. Throws what a
// session throws when this rank fails where rank 0 did not (rank 0 then
// asks it to train a session it does not have); a failure rank 0 shares (a
// budget too small, a missing dataset) waits for rank 0's next turn.
void follow_window(const RunSettings& settings, Communicator& comm);

}  // namespace tidepool::app
