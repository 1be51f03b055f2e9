// The gopt executable: everything lives in gopt_experiments; main only hands over argv.
#include <iostream>

#include "agents/compute_threads.h"
#include "agents/cpu_numerics.h"
#include "experiments/cli/cli.h"

int main(int argc, char** argv) {
  // Before any BLAS or ATen work: OpenBLAS's own kernels for this CPU where it fell back to
  // generic ones, and neither library on a path GOPT_CPU_HIDE hides (agents/cpu_numerics.h);
  // every results file records the kernels it ran with.
  (void)gopt::agents::select_cpu_kernels();
  // One LibTorch thread for every agent, whatever the command, the number of jobs or the
  // machine's cores: a learner's results depend on the thread count (its sums split
  // differently), and on this 2-core machine one thread also trained GO 2.2x faster than
  // two (agents/compute_threads.h).
  gopt::agents::limit_compute_threads(1);
  return gopt::experiments::run_cli(argc, argv, std::cout, std::cerr);
}
