#include "experiments/cli/stop_signal.h"

namespace gopt::experiments {
namespace {

std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "signal handlers need a lock-free flag");

extern "C" void request_stop(int /*signal*/) { g_stop_requested.store(true); }

}  // namespace

std::atomic<bool>& stop_requested() { return g_stop_requested; }

StopOnSignal::StopOnSignal() {
  g_stop_requested.store(false);
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;
  sigaction(SIGINT, &action, &old_int_);
  sigaction(SIGTERM, &action, &old_term_);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

}  // namespace gopt::experiments
