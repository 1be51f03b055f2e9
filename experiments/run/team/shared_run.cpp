// The loop of a run shared by ranks (experiments/run/team/shared_run.h).
#include "experiments/run/team/shared_run.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace gopt::experiments::runner {
namespace {

// What rank 0's loop knows of the run while it watches.
struct Watch {
  std::map<std::pair<int, int>, int> slots;  // (rank, worker) -> progress slot
  std::vector<char> done;                    // per rank: it said it is done
  std::optional<Clock::time_point> halted_at;
  bool interrupted = false;
};

// Rank 0: hands the other ranks' new events to `handle`; false when it must halt (a row
// could not be written).
bool receive_events(RunTeam& team, Watch& watch,
                    const std::function<bool(const TeamEvent&, int)>& handle, Progress& progress) {
  bool ok = true;
  for (const auto& e : team.receive()) {
    const auto key = std::make_pair(e.rank, e.worker);
    auto it = watch.slots.find(key);
    if (it == watch.slots.end()) it = watch.slots.emplace(key, progress.add_worker()).first;
    if (e.kind == TeamEvent::Kind::kDone) watch.done[static_cast<std::size_t>(e.rank)] = 1;
    if (!handle(e, it->second)) ok = false;
  }
  return ok;
}

// A rank other than 0, its workers finished: tells rank 0 (and whether it was interrupted).
void tell_rank0_done(RunTeam& team, bool interrupted, RunSummary& summary) {
  TeamEvent e;
  e.kind = TeamEvent::Kind::kDone;
  e.interrupted = interrupted;
  try {
    team.send(e);
  } catch (const std::exception& ex) {
    summary.team_failure = std::string("telling rank 0 this rank is done: ") + ex.what();
  }
}

}  // namespace

void run_shared(RunTeam& team, int workers, const std::function<void(int)>& work,
                std::atomic<bool>& halt, const std::atomic<bool>* stop,
                const std::function<bool(const TeamEvent&, int)>& handle,
                const std::function<bool()>& failed, Progress& progress, RunSummary& summary) {
  // After a stop (Ctrl-C, or torchrun's agent stopping every worker), rank 0 waits this long
  // for the others to send what they finished before it exits.
  constexpr double kDrainSeconds = 5;
  const bool remote = team.rank() != 0;
  std::atomic<int> running{workers};
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&work, &running, w] {
      work(w);
      --running;
    });
  }
  Watch watch;
  watch.done.assign(static_cast<std::size_t>(team.size()), 0);
  watch.done[0] = 1;
  auto halt_now = [&] {
    halt = true;
    if (!watch.halted_at) watch.halted_at = Clock::now();
  };
  for (;;) {
    if (!watch.halted_at && stop != nullptr && stop->load()) {
      watch.interrupted = true;
      halt_now();
    }
    if (!watch.halted_at && failed()) halt_now();
    if (summary.team_failure.empty()) {
      if (auto why = team.failure()) {
        summary.team_failure = *why;
        halt = true;
      }
    }
    if (!remote && summary.team_failure.empty()) {
      try {
        if (!receive_events(team, watch, handle, progress)) halt_now();
      } catch (const std::exception& e) {
        summary.team_failure = std::string("reading the other ranks' results: ") + e.what();
        halt = true;
      }
    }
    if (running == 0) {
      const bool all_done =
          std::all_of(watch.done.begin(), watch.done.end(), [](char d) { return d != 0; });
      const bool drained =
          watch.halted_at &&
          std::chrono::duration<double>(Clock::now() - *watch.halted_at).count() > kDrainSeconds;
      if (remote || all_done || !summary.team_failure.empty() || drained) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (auto& t : threads) t.join();
  if (remote && summary.team_failure.empty()) tell_rank0_done(team, watch.interrupted, summary);
}

}  // namespace gopt::experiments::runner
