#include "app/window_ranks.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "app/session.h"
#include "engine/observe/rank_events.h"

namespace tidepool::app {
namespace {

const char* kind_name(Turn::Kind k) {
  switch (k) {
    case Turn::Kind::train: return "train";
    case Turn::Kind::apply: return "apply";
    case Turn::Kind::restart: return "restart";
    case Turn::Kind::stop: return "stop";
  }
  return "?";
}

// How long a rank sleeps between looks for its next turn: from a fraction
// of a millisecond while turns come one per iteration, doubling while none
// comes, up to a few milliseconds, so a paused window costs no CPU.
constexpr std::chrono::microseconds kFirstPoll{100}, kLongestPoll{5000};

}  // namespace

void send_turn(Communicator& comm, const Turn& turn) {
  const std::string text = nlohmann::json{{"kind", kind_name(turn.kind)}, {"settings", to_json(turn.settings)}}.dump();
  const std::vector<unsigned char> bytes(text.begin(), text.end());
  for (int r = 1; r < comm.size(); ++r) comm.send(r, kTurnTag, bytes);
}

Turn next_turn(Communicator& comm) {
  std::optional<Message> m;
  for (auto poll = kFirstPoll; !(m = comm.try_receive(kTurnTag)); poll = std::min(2 * poll, kLongestPoll))
    std::this_thread::sleep_for(poll);
  try {
    const nlohmann::json j = nlohmann::json::parse(m->bytes.begin(), m->bytes.end());
    Turn t;
    const std::string kind = j.at("kind").get<std::string>();
    for (Turn::Kind k : {Turn::Kind::train, Turn::Kind::apply, Turn::Kind::restart, Turn::Kind::stop})
      if (kind == kind_name(k)) t.kind = k;
    if (kind != kind_name(t.kind)) throw std::invalid_argument("unknown turn '" + kind + "'");
    t.settings = run_settings_from_json(j.at("settings"));
    return t;
  } catch (const std::exception& e) {
    throw CommError("rank " + std::to_string(m->from) + " sent a turn this rank cannot read (" + e.what() +
                    "): are all ranks the same tidepool?");
  }
}

void follow_window(const RunSettings& first, Communicator& comm) {
  EventForwarder forwarder(comm);
  RunSettings settings = first;
  for (;;) {
    // The session, as rank 0 builds its own; a failure here is likely
    // rank 0's too, and it decides what comes next.
    std::unique_ptr<TrainingSession> session;
    std::string failed;
    try {
      session = std::make_unique<TrainingSession>(
          settings, SessionOptions{.room_to_grow = true, .for_window = true, .comm = &comm});
      session->start(&forwarder);
    } catch (const std::exception& e) {
      session.reset();
      failed = e.what();
    }
    for (;;) {
      Turn turn = next_turn(comm);
      if (turn.kind == Turn::Kind::stop) {
        forwarder.finish();
        return;
      }
      if (turn.kind == Turn::Kind::restart) {
        settings = std::move(turn.settings);
        session.reset();  // frees the old device before the new one reserves memory
        forwarder.start_over();
        break;
      }
      if (!session) throw std::runtime_error(failed);  // rank 0 trains on: this rank alone failed
      if (turn.kind == Turn::Kind::apply) {
        session->apply(turn.settings.memory);  // the same plan as rank 0's: the same outcome
        continue;
      }
      const StepReport r = session->train_iteration();
      if (r.epoch_end && !session->diverged()) {
        session->check_ranks_agree();
        session->evaluate();
      }
    }
  }
}

}  // namespace tidepool::app
