#include "experiments/run/team/team.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include "core/errors.h"
#include "experiments/run/team/distributed.h"

namespace gopt::experiments {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<std::uint8_t>& b) { return {b.begin(), b.end()}; }

}  // namespace

// --- The plan --------------------------------------------------------------------------

RankPlan plan_ranks(const std::vector<double>& expected_s,
                    const std::vector<std::ptrdiff_t>& waits_for, int ranks) {
  GOPT_ASSERT(expected_s.size() == waits_for.size(), "one cost per item");
  GOPT_ASSERT(ranks >= 1, "at least one rank");
  const std::size_t n = expected_s.size();
  // Groups: an item that waits for none leads one; its waiters are its members.
  std::vector<std::vector<std::size_t>> members(n);
  std::vector<double> group_s(n, 0);
  std::vector<std::size_t> leaders;
  for (std::size_t i = 0; i < n; ++i) {
    const auto leader = waits_for[i] < 0 ? i : static_cast<std::size_t>(waits_for[i]);
    GOPT_ASSERT(leader <= i && waits_for[leader] < 0, "an item waits for an earlier leader");
    if (leader == i) {
      leaders.push_back(i);
    } else {
      members[leader].push_back(i);
    }
    group_s[leader] += expected_s[i];
  }
  std::stable_sort(leaders.begin(), leaders.end(),
                   [&](std::size_t a, std::size_t b) { return group_s[a] > group_s[b]; });
  RankPlan plan;
  plan.rank_of.assign(n, 0);
  plan.order.resize(static_cast<std::size_t>(ranks));
  std::vector<double> load(static_cast<std::size_t>(ranks), 0);
  for (const auto leader : leaders) {
    const auto r = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) -
                                            load.begin());  // the first of equal loads
    load[r] += group_s[leader];
    auto& m = members[leader];
    std::stable_sort(m.begin(), m.end(),
                     [&](std::size_t a, std::size_t b) { return expected_s[a] > expected_s[b]; });
    plan.order[r].push_back(leader);
    plan.order[r].insert(plan.order[r].end(), m.begin(), m.end());
    plan.rank_of[leader] = static_cast<int>(r);
    for (const auto i : m) plan.rank_of[i] = static_cast<int>(r);
  }
  return plan;
}

// --- StoreRunTeam ----------------------------------------------------------------------
//
// Keys (under the launch's prefix): "hb/R" rank R's heartbeat counter; "ev/R/K" rank R's
// K-th event and "evn/R" how many it sent; "start" and "plan" from rank 0; "abort" the
// first fatal error of any rank.

struct StoreRunTeam::Impl {
  Distributed& peers;
  int rank = 0;
  int size = 1;
  double timeout_s = 60;
  double beat_s = 0.5;

  std::mutex send_mutex;  // a rank's events are numbered in the order they are sent
  std::int64_t sent = 0;
  std::map<int, Clock::time_point> last_step;  // per worker, to thin kStep events

  std::vector<std::int64_t> received;  // rank 0: events read per rank
  std::vector<char> done;              // rank 0: ranks that sent kDone

  mutable std::mutex mutex;  // guards what the heartbeat thread shares
  std::optional<std::string> failure;
  std::vector<char> watched;  // ranks whose heartbeat this rank watches
  std::condition_variable cv;
  bool stopping = false;
  std::thread beat;

  explicit Impl(Distributed& p) : peers(p) {}

  void set_failure(const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!failure) failure = message;
  }

  void beat_loop() {
    std::vector<std::int64_t> last(static_cast<std::size_t>(size), -1);
    std::vector<Clock::time_point> moved(static_cast<std::size_t>(size), Clock::now());
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      const auto watching = watched;
      lock.unlock();
      try {
        peers.add("hb/" + std::to_string(rank), 1);
        if (auto abort = peers.try_get("abort")) set_failure(text_of(*abort));
        const auto now = Clock::now();
        for (int r = 0; r < size; ++r) {
          const auto u = static_cast<std::size_t>(r);
          if (!watching[u]) continue;
          const auto beats = peers.add("hb/" + std::to_string(r), 0);
          if (beats != last[u]) {
            last[u] = beats;
            moved[u] = now;
          } else if (std::chrono::duration<double>(now - moved[u]).count() > timeout_s) {
            set_failure("rank " + std::to_string(r) + " stopped answering: no heartbeat for " +
                        std::to_string(static_cast<int>(timeout_s)) +
                        " s (killed, out of memory, or its machine is unreachable)");
          }
        }
      } catch (const std::exception& e) {
        // e names the store; hosted by rank 0, its silence is rank 0's.
        set_failure(peers.launch().agent_store
                        ? std::string(e.what())
                        : "rank 0 stopped answering (" + std::string(e.what()) + ")");
      }
      lock.lock();
      cv.wait_for(lock, std::chrono::duration<double>(beat_s));
    }
  }

  // Waits for rank 0's `key`, watching for failures.
  std::vector<std::uint8_t> wait_for(const std::string& key) {
    for (;;) {
      if (auto value = peers.try_get(key)) return *value;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure) throw core::Error(*failure);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
};

StoreRunTeam::StoreRunTeam(Distributed& peers) : impl_(std::make_unique<Impl>(peers)) {
  auto& s = *impl_;
  s.rank = peers.rank();
  s.size = peers.world_size();
  s.timeout_s = peers.timeout_s();
  s.beat_s = std::min(0.5, s.timeout_s / 10);
  s.received.assign(static_cast<std::size_t>(s.size), 0);
  s.done.assign(static_cast<std::size_t>(s.size), 0);
  s.watched.assign(static_cast<std::size_t>(s.size), 0);
  for (int r = 0; r < s.size; ++r) {
    s.watched[static_cast<std::size_t>(r)] = s.rank == 0 ? r != 0 : r == 0;
  }
  s.beat = std::thread([&s] { s.beat_loop(); });
}

StoreRunTeam::~StoreRunTeam() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->beat.join();
}

int StoreRunTeam::rank() const { return impl_->rank; }
int StoreRunTeam::size() const { return impl_->size; }

RunStart StoreRunTeam::share_start(const RunStart& mine) {
  if (impl_->rank == 0) {
    impl_->peers.set("start", encode_start(mine));
    return mine;
  }
  return decode_start(impl_->wait_for("start"));
}

void StoreRunTeam::share_plan(std::vector<int>& rank_of) {
  if (impl_->rank == 0) {
    impl_->peers.set("plan", encode_plan(rank_of));
    return;
  }
  const auto plan = decode_plan(impl_->wait_for("plan"));
  if (plan.size() != rank_of.size()) {
    throw core::Error("rank " + std::to_string(impl_->rank) + " has " +
                      std::to_string(rank_of.size()) + " work items and rank 0 " +
                      std::to_string(plan.size()) +
                      ": the ranks read different configs or results files");
  }
  rank_of.assign(plan.begin(), plan.end());
}

void StoreRunTeam::send(const TeamEvent& event) {
  auto& s = *impl_;
  GOPT_ASSERT(s.rank != 0, "rank 0 receives events, it does not send them");
  std::lock_guard<std::mutex> lock(s.send_mutex);
  if (event.kind == TeamEvent::Kind::kStep) {
    // A learner's updates can come many times a second; rank 0's display needs a few.
    const auto now = Clock::now();
    auto it = s.last_step.find(event.worker);
    if (it != s.last_step.end() && now - it->second < std::chrono::milliseconds(500)) return;
    s.last_step[event.worker] = now;
  }
  const std::string prefix = std::to_string(s.rank);
  s.peers.set("ev/" + prefix + "/" + std::to_string(s.sent), encode_event(event));
  ++s.sent;
  s.peers.add("evn/" + prefix, 1);
}

std::vector<TeamEvent> StoreRunTeam::receive() {
  auto& s = *impl_;
  GOPT_ASSERT(s.rank == 0, "only rank 0 receives events");
  std::vector<TeamEvent> events;
  for (int r = 1; r < s.size; ++r) {
    const auto u = static_cast<std::size_t>(r);
    if (s.done[u]) continue;
    const auto prefix = std::to_string(r);
    const auto count = s.peers.add("evn/" + prefix, 0);
    for (; s.received[u] < count; ++s.received[u]) {
      const auto key = "ev/" + prefix + "/" + std::to_string(s.received[u]);
      auto bytes = s.peers.try_get(key);
      GOPT_ASSERT(bytes.has_value(), "an event is stored before it is counted");
      s.peers.remove(key);
      TeamEvent e = decode_event(*bytes);
      e.rank = r;
      if (e.kind == TeamEvent::Kind::kDone) {
        s.done[u] = 1;
        std::lock_guard<std::mutex> lock(s.mutex);
        s.watched[u] = 0;  // a rank that finished may exit: its silence is no failure
      }
      events.push_back(std::move(e));
      if (s.done[u]) break;
    }
  }
  return events;
}

std::optional<std::string> StoreRunTeam::failure() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->failure;
}

void StoreRunTeam::abort(const std::string& message) {
  const std::string text = "rank " + std::to_string(impl_->rank) + " stopped: " + message;
  try {
    // The first fatal error wins; a later one would only repeat what went wrong.
    if (!impl_->peers.try_get("abort")) impl_->peers.set("abort", bytes_of(text));
  } catch (const std::exception&) {
    // the store is gone too: the others notice the silence
  }
}

}  // namespace gopt::experiments
