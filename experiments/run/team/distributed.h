// Joining the other processes of a launch (torchrun, or any launcher that sets the same
// environment variables): the launch's variables read and checked, then a c10d TCPStore
// for small keyed messages and a Gloo process group (NCCL when built against a CUDA
// LibTorch with GPUs present) that collective work can use. No LibTorch in this header.
//
//   auto launch = read_launch_environment(process_environment());  // InputError on a bad one
//   if (launch) {
//     Distributed peers(*launch, DistributedOptions().with_timeout_s(60));
//     peers.set("greeting", {'h', 'i'});
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/learner_group.h"
#include "core/options.h"

namespace gopt::experiments {

/// What the launcher says about this process. Variables as torchrun sets them.
struct LaunchEnvironment {
  int rank = 0;             ///< RANK: this process, 0 .. world_size-1
  int world_size = 1;       ///< WORLD_SIZE: processes in the launch, all machines together
  int local_rank = 0;       ///< LOCAL_RANK: this process on its machine (RANK when unset)
  std::string master_addr;  ///< MASTER_ADDR: the host of the store
  int master_port = 0;      ///< MASTER_PORT: the store's TCP port
  /// TORCHELASTIC_USE_AGENT_STORE: torchrun's agent already hosts the store on
  /// MASTER_PORT, so every process connects to it; otherwise rank 0 hosts it.
  bool agent_store = false;
  int restart_count = 0;  ///< TORCHELASTIC_RESTART_COUNT: keys of earlier attempts are ignored
};

/// Looks up one environment variable (none when unset).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

/// The process's own environment (getenv).
[[nodiscard]] EnvLookup process_environment();

/// The launch described by RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and
/// TORCHELASTIC_USE_AGENT_STORE; none when neither RANK nor WORLD_SIZE is set (a plain
/// one-process run). An empty variable counts as unset. Throws core::InputError naming the variable
/// when one is missing (RANK without WORLD_SIZE or the reverse; MASTER_ADDR or MASTER_PORT when
/// WORLD_SIZE > 1), not a number, or out of range (RANK >= WORLD_SIZE, a port outside 1..65535).
[[nodiscard]] std::optional<LaunchEnvironment> read_launch_environment(const EnvLookup& env);

struct DistributedOptions {
  /// Seconds to reach the store, for every rank to join, and for any one store call.
  GOPT_OPTION(double, timeout_s, 60)
};

/// This process's membership in a launch of world_size > 1 processes: a TCPStore client
/// (rank 0 hosts the server unless torchrun's agent does) whose keys live under a prefix
/// per launch attempt, and a process group joined by every rank. The constructor returns
/// once every rank joined. Store calls are thread-safe.
class Distributed {
 public:
  /// Throws core::InputError naming MASTER_ADDR and MASTER_PORT when the store cannot be
  /// reached (or, on rank 0, hosted) within the timeout, and core::Error when not every
  /// rank joined the process group within it.
  Distributed(const LaunchEnvironment& launch, DistributedOptions options = {});
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  [[nodiscard]] int rank() const;
  [[nodiscard]] int world_size() const;
  [[nodiscard]] const LaunchEnvironment& launch() const;
  [[nodiscard]] double timeout_s() const;
  /// The process group's backend: "gloo", or "nccl" (a CUDA build with a GPU).
  [[nodiscard]] const std::string& backend() const;
  /// "HOST:PORT (hosted by rank 0)" or "... (hosted by torchrun's agent)", for messages.
  [[nodiscard]] std::string store_text() const;

  /// Store calls throw core::Error naming the store when it cannot be reached.
  /// Stores `value` under `key` (replacing it).
  void set(const std::string& key, const std::vector<std::uint8_t>& value);
  /// The value under `key`, or none when there is none yet (never waits).
  [[nodiscard]] std::optional<std::vector<std::uint8_t>> try_get(const std::string& key);
  /// Adds `delta` to the counter under `key` (created at 0) and returns the new value;
  /// `add(key, 0)` reads it.
  std::int64_t add(const std::string& key, std::int64_t delta);
  /// Removes `key`; false when it was not there.
  bool remove(const std::string& key);

  /// A collective over the process group (every rank calls it): true when every rank
  /// passed the same `fingerprint` (an all-reduce of its minimum and maximum). Throws
  /// core::Error when a rank does not take part within the timeout.
  [[nodiscard]] bool same_on_every_rank(std::uint64_t fingerprint);
  /// A collective: element-wise sums over the process group, in place (every rank passes
  /// `count` values). Throws core::Error when a rank does not take part within the timeout.
  void all_reduce_sum(double* values, std::size_t count);
  void all_reduce_sum(float* values, std::size_t count);

 private:
  template <typename Call>
  auto store_call(Call call);

  template <typename T>
  void all_reduce(T* values, std::size_t count);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Data-parallel learners over every rank of a launch (`gopt run --data-parallel`): the
/// agents' LearnerGroup on the launch's process group. Counts the exchanges and the wall
/// seconds spent in them (waiting for the slowest rank included). Used by one thread.
class LaunchLearners final : public agents::LearnerGroup {
 public:
  explicit LaunchLearners(Distributed& peers) : peers_(peers) {}
  [[nodiscard]] int rank() const override { return peers_.rank(); }
  [[nodiscard]] int size() const override { return peers_.world_size(); }
  void all_reduce_sum(std::vector<double>& values) override {
    timed([&] { peers_.all_reduce_sum(values.data(), values.size()); });
  }
  void all_reduce_sum(std::vector<float>& values) override {
    timed([&] { peers_.all_reduce_sum(values.data(), values.size()); });
  }
  [[nodiscard]] std::int64_t exchanges() const { return exchanges_; }
  [[nodiscard]] double exchange_s() const { return exchange_s_; }

 private:
  void timed(const std::function<void()>& exchange);

  Distributed& peers_;
  std::int64_t exchanges_ = 0;
  double exchange_s_ = 0;
};

}  // namespace gopt::experiments
