// How many threads the learned agents' LibTorch work may use. Kept free of LibTorch headers
// so that the experiment runner, which does not see LibTorch, can set it per job thread.
#pragma once

namespace gopt::agents {

/// Limits LibTorch's intra-op threads for work issued from the calling thread (OpenMP's
/// team size is per thread; threads started later inherit the last value set) and
/// OpenBLAS's threads (process-wide) to `threads`, at least 1. `gopt` sets 1 at start and
/// the runner in each job thread, because a learner's results depend on the thread count
/// (they would change with the machine's cores), and because every job starting a team of
/// all cores oversubscribed the machine (two jobs on two cores ran 3x slower).
void limit_compute_threads(int threads);

}  // namespace gopt::agents
