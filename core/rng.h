// Seeded randomness, always injected (STYLE.md point 2: no global RNG). One experiment seed
// fans out into independent, reproducible streams: rng.fork(stream_id).
//
//   Rng rng(config.seed);
//   Rng rollouts = rng.fork(1);          // same seed + same stream id -> same numbers
//   int d = rollouts.uniform_int(0, num_devices - 1);
#pragma once

#include <cstdint>
#include <random>

namespace gopt::core {

/// SplitMix64 mix of a seed and a stream id: well-spread, deterministic 64-bit seeds.
[[nodiscard]] std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream);

class Rng {
 public:
  using Engine = std::mt19937_64;

  explicit Rng(std::uint64_t seed) : seed_(seed), engine_(mix_seed(seed, 0)) {}

  /// The seed this generator was created with.
  [[nodiscard]] std::uint64_t seed() const { return seed_; }
  /// An independent generator for sub-task `stream`; does not advance this one.
  [[nodiscard]] Rng fork(std::uint64_t stream) const { return Rng(mix_seed(seed_, stream + 1)); }
  /// The engine, for <random> distributions and for LibTorch seeding.
  Engine& engine() { return engine_; }

  /// Uniform in [0, 1).
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(engine_); }
  /// Uniform integer in [lo, hi] (both inclusive).
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }
  /// Next raw 64-bit value.
  std::uint64_t next() { return engine_(); }

 private:
  std::uint64_t seed_;
  Engine engine_;
};

}  // namespace gopt::core
