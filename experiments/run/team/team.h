// A `gopt run` shared by several processes (ranks): which rank runs which work item, and
// what the ranks tell each other while they run. Every rank runs its own items; the others
// send each finished result to rank 0, the one writer of the results file, and rank 0
// shows the progress of the whole run. StoreRunTeam carries the messages over the c10d
// store of a Distributed launch (experiments/run/team/distributed.h); the runner sees only RunTeam.
//
//   Distributed peers(*launch);
//   StoreRunTeam team(peers);
//   RunStart start = team.share_start({sink.existing()});
//   run_experiment(config, sink, RunnerOptions().with_team(&team).with_done(start.done));
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/run/team/events.h"

namespace gopt::experiments {

class Distributed;

/// Which rank runs each work item, and each rank's items in the order it takes them.
struct RankPlan {
  std::vector<int> rank_of;                     ///< per item
  std::vector<std::vector<std::size_t>> order;  ///< per rank: its items, longest first
};

/// Deals work items to `ranks` ranks, longest first. An item that waits for another (a
/// go_finetune or go_zero_shot job for the pretraining whose checkpoint it reads) goes to
/// that item's rank, so a checkpoint never crosses machines; the two form a group whose
/// cost is the sum of theirs. Groups are dealt in order of decreasing expected seconds
/// (ties: the earlier item first) to the rank with the least expected seconds so far (ties:
/// the lower rank). A rank takes its groups in the order dealt, each group's leader first,
/// then its members longest first. `waits_for` as in WorkQueue.
[[nodiscard]] RankPlan plan_ranks(const std::vector<double>& expected_s,
                                  const std::vector<std::ptrdiff_t>& waits_for, int ranks);

/// The other ranks of a run, as the runner sees them.
class RunTeam {
 public:
  virtual ~RunTeam() = default;
  RunTeam(const RunTeam&) = delete;
  RunTeam& operator=(const RunTeam&) = delete;

  [[nodiscard]] virtual int rank() const = 0;
  [[nodiscard]] virtual int size() const = 0;
  /// Rank 0 passes the item -> rank assignment; the others wait for it and receive it in
  /// `rank_of`. Throws core::Error when a rank fails while waiting.
  virtual void share_plan(std::vector<int>& rank_of) = 0;
  /// A rank other than 0: hands `event` to rank 0 (kStep events may be thinned).
  virtual void send(const TeamEvent& event) = 0;
  /// Rank 0: the events sent since the last call, in the order each rank sent them.
  [[nodiscard]] virtual std::vector<TeamEvent> receive() = 0;
  /// Why the run cannot go on (a rank stopped answering, or reported a fatal error), or
  /// none while every rank it watches is well.
  [[nodiscard]] virtual std::optional<std::string> failure() const = 0;

 protected:
  RunTeam() = default;
};

/// A RunTeam over the store of a Distributed launch. Every rank sends a heartbeat (a
/// counter in the store, twice a second); rank 0 watches the others', the others watch
/// rank 0's, and a rank whose counter has not moved for the launch's timeout is reported
/// by number. Events travel as numbered keys per rank, read and deleted by rank 0.
class StoreRunTeam final : public RunTeam {
 public:
  explicit StoreRunTeam(Distributed& peers);
  ~StoreRunTeam() override;

  [[nodiscard]] int rank() const override;
  [[nodiscard]] int size() const override;
  /// Rank 0 passes the results file's finished results; the others wait for them.
  RunStart share_start(const RunStart& mine);
  void share_plan(std::vector<int>& rank_of) override;
  void send(const TeamEvent& event) override;
  [[nodiscard]] std::vector<TeamEvent> receive() override;
  [[nodiscard]] std::optional<std::string> failure() const override;
  /// Tells every rank that this one cannot go on (`message` says why); they stop.
  void abort(const std::string& message);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gopt::experiments
