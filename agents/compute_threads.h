// How many threads the learned agents' LibTorch work may use. Kept free of LibTorch headers
// so that the experiment runner, which does not see LibTorch, can set it per job thread.
#pragma once

namespace gopt::agents {

/// Limits LibTorch's intra-op parallelism for work issued from the calling thread to
/// `threads` (OpenMP's team size is a per-thread setting; threads started later inherit the
/// last value set), and OpenBLAS's threads, which are process-wide, to the same number.
/// `gopt` sets 1 at start and the runner in each job thread: a learner's results depend on
/// the thread count, so they would otherwise change with the machine's cores (and with
/// --jobs, had jobs shared the cores); and left at every core, each job's parallel regions
/// started a team of all cores: two jobs on two cores ran 3x slower than with one thread
/// each, and GO on wavenet_2 trained 2.2x faster on one thread than on two.
void limit_compute_threads(int threads);

}  // namespace gopt::agents
