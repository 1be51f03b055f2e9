// GO's two files: the checkpoint a pretrained policy travels in (go_pretrain writes it,
// go_finetune and go_zero_shot read it) and the training snapshot an interrupted run
// resumes from (TrainSnapshots). Both are LibTorch archives tagged with a format, a version
// and a minor version ("minor_version"; a file that records none is minor 0). A new version
// may change anything; a new minor version only adds fields. Writers write the current
// version.minor; readers take it, in which every field is required, and fill or migrate the
// older ones; a version this build does not know (a later major, or a later minor of the
// current one) is an error naming the file.
//
// The policy's options are recorded as "key=int;..." text in key order (bools 0/1): the
// saved members of kGoPolicyMembers (go_model.h) and `features`, the numeric features per op
// the policy reads (kNumericFeatures when written; another count is an error).
//
//   Checkpoint  what it added
//     1         the policy options text may lack the multi-task fields (place, schedule,
//               fuse, task_layers, priority_levels, fusion_levels), unit_decisions and
//               features; migrate_policy_fields() fills them with what such a file's
//               policy was (placement only, per op, 20 features per op)
//     2.0       the options text records all of them (each one required)
//     2.1       unit_gate (a file of an earlier version reads unit_gate=0: it had no gate)
//   Snapshot
//     1         may lack the model-selection state (best_validation, best_validation_steps);
//               its options text is a version-1 checkpoint's
//     2.0       records the model-selection state; options text as checkpoint 2.0
//     2.1       options text as checkpoint 2.1 (unit_gate)
//     2.2       each graph's improvements (task<i>.improvements); in an earlier file the best
//               counts as found at the graph's last sample
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/go/go_model.h"

namespace gopt::agents::go {

/// Checkpoint file format identifier, version and minor version, stored in every checkpoint.
inline constexpr const char* kCheckpointFormat = "gopt-go-checkpoint";
inline constexpr std::int64_t kCheckpointVersion = 2;
inline constexpr std::int64_t kCheckpointMinorVersion = 1;
/// Training snapshot format identifier, version and minor version.
inline constexpr const char* kSnapshotFormat = "gopt-go-training-snapshot";
inline constexpr std::int64_t kSnapshotVersion = 2;
inline constexpr std::int64_t kSnapshotMinorVersion = 2;

/// A GO policy with what training it further needs: its Adam optimizer and the updates
/// behind it. What a checkpoint holds.
struct TrainedPolicy {
  GoPolicy policy{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::int64_t updates = 0;

  /// A new Adam optimizer over the policy's parameters.
  void make_optimizer(double learning_rate);
  /// Sets the learning rate of every parameter group.
  void set_learning_rate(double learning_rate);
};

/// The policy options stored in a checkpoint, as "key=value" text (for error messages and
/// the results file): the saved members of kGoPolicyMembers and `features`, in key order.
[[nodiscard]] std::string policy_options_text(const GoPolicyOptions& options);

/// Version 1's policy fields brought to version 2.0: the fields a version-1 file may lack get
/// the value its policy had (placement only, per-op decisions, 20 features per op).
void migrate_policy_fields(std::map<std::string, std::int64_t>& fields);

/// Reads the policy options text of a file of format `version`.`minor_version` (checkpoint
/// and snapshot versions migrate alike; a file that records no minor version is minor 0):
/// version 1 migrates, and the fields of a later minor version get the value an earlier
/// file's policy had. InputError naming `path` for a missing field, or a policy that reads
/// another number of features than this build computes.
[[nodiscard]] GoPolicyOptions parse_policy_options(const std::string& text, std::int64_t version,
                                                   const std::string& path,
                                                   std::int64_t minor_version = 0);

/// Runs `read`; a LibTorch error in it (a damaged file, or a field the file's version
/// requires missing) becomes an InputError naming `path` and `field`: `what` and the
/// error's first line. InputErrors from `read` pass unchanged.
void read_or_input_error(const std::string& path, const std::string& field, const std::string& what,
                         const std::function<void()>& read);

/// Writes `policy` to `path` as a checkpoint of the current version.minor (atomically,
/// through a temporary file).
void save_checkpoint(const std::string& path, const TrainedPolicy& policy);

/// Reads the checkpoint at `path`, of any version this build reads, onto `device`; the
/// optimizer takes `learning_rate`. InputError naming the file for a missing, corrupt or
/// mismatched one. A checkpoint written from a GPU reads on the CPU and the reverse.
[[nodiscard]] TrainedPolicy load_checkpoint(const std::string& path, double learning_rate,
                                            torch::Device device = torch::kCPU);

/// The policy of a checkpoint or a training snapshot, and the updates behind it
/// (`gopt agents inspect`); `options_text` receives its options as recorded.
[[nodiscard]] GoPolicy read_any_policy(const std::string& path, std::int64_t& updates,
                                       std::string& options_text);

/// Everything a training run's remaining updates depend on besides the policy and its
/// optimizer: the random streams, every graph's samples, best decision and reward
/// reference, the model selection's best score, and the learning curve so far.
struct TrainingSnapshot {
  struct Task {
    std::int64_t nodes = 0;  ///< the graph's ops (a snapshot of other graphs is not used)
    std::int64_t samples = 0;
    double best_s = 0;
    double reference_s = 0;
    core::Decision best;
    /// Environment::improvements(); a snapshot written before they were kept has none,
    /// and its restore takes the best so far as found at the snapshot's last sample.
    std::vector<BestImprovement> improvements;
  };
  std::string identity;      ///< TrainSnapshots::identity
  std::string options;       ///< policy_options_text of the policy
  std::int64_t steps = 0;    ///< updates of this training run
  std::int64_t updates = 0;  ///< updates behind the policy (TrainedPolicy::updates)
  double best_validation = std::numeric_limits<double>::infinity();
  std::int64_t best_validation_steps = 0;
  std::string rng;          ///< the agent's core::Rng engine, as text
  torch::Tensor generator;  ///< the sampling generator's state
  std::vector<Task> tasks;
  std::vector<LearningCurvePoint> curve;
};

/// Writes `snapshot` and `policy` to `path` (atomically).
void write_snapshot(const std::string& path, const TrainingSnapshot& snapshot,
                    const TrainedPolicy& policy);

/// A snapshot as read, with its policy and optimizer archives not yet applied.
struct SnapshotFile {
  TrainingSnapshot snapshot;
  torch::serialize::InputArchive policy;
  torch::serialize::InputArchive optimizer;
};

/// Reads the snapshot at `path` when it is one of `identity` for a policy of
/// `options_text` on graphs of `task_nodes` ops each; nullopt when there is none, it
/// belongs to something else, or it does not read as a snapshot (training then starts over
/// and replaces it). The policy and optimizer archives hold their tensors on `device`.
[[nodiscard]] std::optional<SnapshotFile> read_snapshot(const std::string& path,
                                                        const std::string& identity,
                                                        const std::string& options_text,
                                                        const std::vector<std::int64_t>& task_nodes,
                                                        torch::Device device = torch::kCPU);

}  // namespace gopt::agents::go
