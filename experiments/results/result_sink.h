// Results of an experiment and where they go. The runner hands every finished
// (workload, agent, seed) result to a ResultSink: the HDF5 file (hdf5_sink.h, the main
// one, schema in docs/results-format.md) or the console. Sinks are reporters behind one
// interface, as google/benchmark's reporters.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"
#include "core/decision.h"

namespace gopt::experiments {

/// Identifies one result: a workload label, an agent label and a seed (labels as in the
/// config).
struct ResultKey {
  std::string workload;
  std::string agent;
  std::uint64_t seed = 0;

  [[nodiscard]] bool operator<(const ResultKey& o) const;
  [[nodiscard]] bool operator==(const ResultKey& o) const;
  /// "wavenet_2 / hdp / seed 1", for messages.
  [[nodiscard]] std::string text() const;
};

/// Where results came from: the binary, its libraries, the machine, the command and the
/// config. A results file records it for its first run (root attributes), for every run into
/// it (`history`) and for every result, so that rows from two binaries or two configs never
/// look like one run.
struct Provenance {
  std::string gopt_version;  ///< "0.1.0"
  std::string git_revision;  ///< the source revision gopt was built from ("unknown" outside git)
  std::string host;          ///< the machine that ran it
  /// The CPU code paths the learned agents' float arithmetic took
  /// (agents::cpu_numerics_description(); results differ between them).
  std::string cpu_numerics;
  std::string libraries;  ///< library versions ("LibTorch 1.13.0; HDF5 1.10.8")
  std::string command;    ///< the command line, shell-quoted ("gopt run cfg.yaml --resume")
  /// FNV-1a (64-bit) of the resolved config text, 16 hex digits (config_hash()).
  std::string config_hash;

  /// Nothing recorded (results of files written before provenance, format version 1).
  [[nodiscard]] bool empty() const;
  [[nodiscard]] bool operator==(const Provenance& o) const;
};

/// The fields of a Provenance (or a const one) with their names in results files (HDF5
/// attributes, JSON keys), in the one order that writers, readers and digests use.
template <typename P>
[[nodiscard]] auto provenance_fields(P& p) {
  using Field = decltype(&p.host);
  return std::array<std::pair<const char*, Field>, 7>{{{"gopt_version", &p.gopt_version},
                                                       {"git_revision", &p.git_revision},
                                                       {"host", &p.host},
                                                       {"cpu_numerics", &p.cpu_numerics},
                                                       {"libraries", &p.libraries},
                                                       {"command", &p.command},
                                                       {"config_hash", &p.config_hash}}};
}

/// The hash Provenance::config_hash records: FNV-1a (64-bit) of `resolved_yaml` as 16
/// lower-case hex digits.
[[nodiscard]] std::string config_hash(const std::string& resolved_yaml);

/// Everything recorded for one (workload, agent, seed).
struct RunResult {
  ResultKey key;
  std::int64_t order = 0;          ///< position of the job in the config's job list
  std::string agent_type;          ///< registry name ("hdp")
  bool learner = false;            ///< the agent trained on the problem
  bool held_out = false;           ///< the workload is a held-out graph
  std::string graph;               ///< the workload's graph argument (suite name or path)
  std::string hardware;            ///< cluster name
  std::uint64_t problem_seed = 0;  ///< the seed the agent saw (mix of seed, workload, agent)
  std::int64_t num_nodes = 0;
  std::int32_t num_devices = 0;
  double best_step_time_s = 0;  ///< simulated step time of the agent's decision, seconds
  bool oom = false;             ///< that decision ran out of memory
  std::int32_t oom_device = -1;
  double lower_bound_critical_path_s = 0;  ///< seconds
  double lower_bound_work_s = 0;           ///< seconds
  /// The tightest valid bound of simulator/lower_bounds.h (LowerBounds::best_s), seconds;
  /// 0 when read from an early version-1 file, which did not record it: readers then use
  /// max(lower_bound_critical_path_s, lower_bound_work_s).
  double lower_bound_s = 0;
  std::int64_t bytes_moved = 0;  ///< bytes between devices in one step
  double wall_s = 0;             ///< wall-clock seconds of the whole job
  std::int64_t samples = 0;      ///< simulations used (training + final evaluation)
  /// Where the learner's samples took their step times: "simulated", or "measured" (each
  /// executed on the backend, `reward: measured`). best_step_time_s is the simulated time
  /// either way; the learning curve and best_improvements are in the reward's times.
  std::string reward = "simulated";
  std::int64_t reward_executions = 0;  ///< measured rewards: distinct decisions executed
  /// Read back: the results format's minor version its writer wrote (0: not recorded).
  /// Writers ignore it and record their own (kResultsFormatMinorVersion).
  std::int64_t format_minor_version = 0;
  core::Decision decision;
  std::vector<double> device_busy_s;                       ///< per device, seconds
  std::vector<std::int64_t> device_peak_memory_bytes;      ///< per device, bytes
  std::vector<agents::LearningCurvePoint> learning_curve;  ///< one point per update
  /// A learner's samples that improved its best step time (Environment::improvements),
  /// the final evaluation's included: the best-so-far curve sample by sample. Empty when
  /// read from a row of format 2.0 or older, which did not record them: readers then use
  /// the learning curve, whose resolution is one update.
  std::vector<agents::BestImprovement> best_improvements;
  std::map<std::string, std::string> options;  ///< the agent's options as given in the config
  /// Every option of the agent with the value it ran with (given or default); empty when
  /// read from an early version-1 file, which did not record it.
  std::map<std::string, std::string> resolved_options;
  /// Simulator validation (`gopt validate`): the decision's step time measured on a real
  /// backend, seconds (median of the timed steps); < 0 when not measured. Then
  /// best_step_time_s is the simulated time of the same decision.
  double measured_step_time_s = -1;
  std::string measured_backend;  ///< the backend that measured it ("cpu: 2 worker threads ...")
  double measured_spread = 0;    ///< (max - min) / median of the measured steps (noise)
  /// Where the simulated time's op times came from: "calibrated" (the profile's cost model)
  /// or "profiled" (the graph's own ops measured on the backend); "calibrated" in files
  /// written before the field existed.
  std::string op_times = "calibrated";
  /// With profiled op times: this decision runs every op on one device, as the profiling
  /// run did, so its simulated time is in sample (not a prediction).
  bool op_times_in_sample = false;
  /// The run that produced it, stamped by the rank that ran the job; empty when read from a
  /// file written before provenance (format version 1).
  Provenance provenance;
  /// The training budget of a learner's agent config; unset for agents that do not learn
  /// and in files written before provenance.
  std::optional<agents::TrainBudget> budget;
};

/// A result's decision executed on a real backend (`gopt measure`, results format 2.2):
/// the measured step time beside the simulated time of what ran. Stored apart from the
/// result (its own group, provenance and digest), since another process, often another
/// gopt revision, measures it later.
struct Measurement {
  ResultKey key;  ///< the result whose decision ran
  /// The executed decision's simulated step time on the file's hardware and cost model,
  /// seconds: the result's decision as the backend ran it (without fusion when
  /// `fusion_dropped`, in files measured before format 2.4), so that it and
  /// `measured_step_time_s` describe the same execution.
  double simulated_step_time_s = 0;
  double measured_step_time_s = 0;  ///< median of every timed step, seconds
  double measured_spread = 0;       ///< (max - min) / median of the timed steps (noise)
  /// Every timed step, seconds, round after round (format 2.3; empty when read from a 2.2
  /// file). Its robust spread is hardware::relative_iqr(step_times_s).
  std::vector<double> step_times_s;
  std::int64_t repeats = 0;       ///< timed steps, over every round
  std::int64_t rounds = 0;        ///< interleaved rounds (each decision once per round)
  std::int64_t warmup_steps = 0;  ///< steps run and discarded before each round's timed ones
  /// Median over the rounds of the busiest worker's CPU time over the step's wall time
  /// (hardware::backend::ExecutionResult::cpu_share); below 1 another process took CPU.
  double cpu_share = 0;
  /// The decision fuses ops and the backend ran them unfused: measured by a gopt whose
  /// backend did not execute fusion (before format 2.4); never set since.
  bool fusion_dropped = false;
  /// Format 2.4 (0 when read from older files): the decision's fused groups (two or more
  /// ops each) the backend ran as one kernel, their member ops, and the members computed in
  /// fused elementwise loops (hardware::backend::ExecutionResult).
  std::int64_t fused_groups = 0;
  std::int64_t fused_ops = 0;
  std::int64_t fused_loop_ops = 0;
  std::string measured_backend;  ///< the backend ("cpu: 2 worker threads, ...")
  std::string profile;           ///< the measured hardware profile's name
  std::string measured_at;       ///< ISO 8601 UTC time the measurement finished
  Provenance provenance;         ///< the measuring process (`gopt measure`)
  /// Read back: the results format's minor version of its writer (writers record theirs).
  std::int64_t format_minor_version = 0;
};

/// A learner's job while it trains: its learning curve so far, flushed to the sink every
/// RunnerOptions::curve_flush_s seconds so that a long run can be watched (`gopt table`,
/// the notebooks). Each flush replaces the job's previous entry; writing one of its results
/// removes it.
struct RunningJob {
  /// The results the job will write: one, or one per training graph for pretraining.
  std::vector<ResultKey> rows;
  std::string agent_type;  ///< registry name ("go_one")
  /// "running"; "stopped" when the run ended without the job's result (Ctrl-C; `--resume`
  /// continues it); "failed" when the job failed (`message` says why).
  std::string state = "running";
  std::string message;
  std::int64_t max_steps = 0;  ///< the job's update budget (0: none)
  std::string updated;         ///< ISO 8601 UTC time of this flush
  std::string host;            ///< the machine and process that run the job
  std::int64_t pid = 0;
  std::vector<agents::LearningCurvePoint> learning_curve;
};

/// One run into a results file: the first `gopt run`, or a later `--resume` of it.
struct RunRecord {
  std::string start_time;  ///< ISO 8601, UTC
  Provenance provenance;
  /// This run's resolved config when it differs from the file's (a resume with another
  /// config or --set); "" when it is the same.
  std::string config_yaml;
};

/// Facts about a run (file attributes in HDF5). The file keeps those of its first run; each
/// later run (`--resume`) is appended to `history`.
struct RunMetadata {
  std::string experiment;     ///< config `name`
  std::string table;          ///< config `table`
  std::string config_source;  ///< config file path
  std::string config_yaml;    ///< resolved config text (after --set)
  std::string start_time;     ///< ISO 8601, UTC
  Provenance provenance;
  /// Every run into the file, the first one first; read back from a file (a sink's begin()
  /// appends the run it is given).
  std::vector<RunRecord> history;
};

/// Receives results as they finish. Calls come from one thread at a time (the runner
/// serialises them); a sink must make each result durable before write() returns.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  ResultSink(const ResultSink&) = delete;
  ResultSink& operator=(const ResultSink&) = delete;

  /// Called once before any result.
  virtual void begin(const RunMetadata& metadata) = 0;
  /// One finished result.
  virtual void write(const RunResult& result) = 0;
  /// The learning curve so far of a job still training (replacing its previous one). The
  /// default ignores it.
  virtual void update_running(const RunningJob& job);

 protected:
  ResultSink() = default;
};

/// Prints one line per result ("wavenet_2  hdp  seed 1  step 12.3 ms  [OOM]").
class ConsoleSink final : public ResultSink {
 public:
  explicit ConsoleSink(std::ostream& out) : out_(out) {}
  void begin(const RunMetadata& metadata) override;
  void write(const RunResult& result) override;

 private:
  std::ostream& out_;
};

/// Forwards to several sinks in order.
class TeeSink final : public ResultSink {
 public:
  explicit TeeSink(std::vector<ResultSink*> sinks) : sinks_(std::move(sinks)) {}
  void begin(const RunMetadata& metadata) override;
  void write(const RunResult& result) override;
  void update_running(const RunningJob& job) override;

 private:
  std::vector<ResultSink*> sinks_;
};

}  // namespace gopt::experiments
