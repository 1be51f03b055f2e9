// Expected run times of experiment jobs, for `gopt run`'s ETA: a job's time grows about
// linearly with its graph's op count (a GO update on gnmt_2, 17.7k ops, costs 5x one on
// rnnlm_2, 4.2k), so a job is expected to take its agent's seconds per op, learned from
// that agent's finished jobs (else from every finished job), times its own op count.
#pragma once

#include <map>
#include <string>

namespace gopt::experiments {

class JobTimeModel {
 public:
  /// A finished job of agent label `agent` on a graph of `nodes` ops took `seconds`.
  void add(const std::string& agent, double nodes, double seconds);
  /// Expected seconds of a job of `agent` on `nodes` ops; negative when no job finished yet.
  [[nodiscard]] double expected_s(const std::string& agent, double nodes) const;
  [[nodiscard]] bool empty() const { return by_agent_.empty(); }

 private:
  struct Totals {
    double seconds = 0;
    double nodes = 0;
  };
  std::map<std::string, Totals> by_agent_;
  Totals all_;
};

}  // namespace gopt::experiments
