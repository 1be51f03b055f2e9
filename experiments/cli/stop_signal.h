// Stopping a long command cleanly on Ctrl-C (SIGINT) or SIGTERM: `gopt run` and
// `gopt measure` install StopOnSignal for their lifetime and pass stop_requested() to the
// work, which checks it between jobs, training updates or executions, writes what is done
// and returns; the command then exits with kExitInterrupted. A second signal kills at once.
//
//   StopOnSignal stop_on_signal;
//   run(Options().with_stop(&stop_requested()));
#pragma once

#include <atomic>
#include <csignal>

namespace gopt::experiments {

/// Exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
inline constexpr int kExitInterrupted = 130;

/// The one global of gopt: set by the SIGINT/SIGTERM handler. A signal handler can reach
/// nothing else; a lock-free atomic is async-signal-safe.
[[nodiscard]] std::atomic<bool>& stop_requested();

/// Installs the handler for its lifetime (clearing stop_requested()); the first signal
/// sets the flag, the second (SA_RESETHAND restores the default action) kills at once.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;
  StopOnSignal(StopOnSignal&&) = delete;
  StopOnSignal& operator=(StopOnSignal&&) = delete;

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

}  // namespace gopt::experiments
