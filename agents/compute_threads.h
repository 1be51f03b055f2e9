// How many threads the learned agents' LibTorch work may use. Kept free of LibTorch headers
// so that the experiment runner, which does not see LibTorch, can set it per job thread.
#pragma once

namespace gopt::agents {

/// Limits LibTorch's intra-op parallelism for work issued from the calling thread to
/// `threads` (OpenMP's team size is a per-thread setting), and OpenBLAS's threads, which are
/// process-wide, to the same number. The runner calls it in each job thread when it runs
/// jobs in parallel: left at its default (every core), each job's parallel regions start a
/// team of all cores, and two jobs on two cores ran 3x slower than with one thread each.
void limit_compute_threads(int threads);

}  // namespace gopt::agents
