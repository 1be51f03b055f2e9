// The gopt executable: everything lives in gopt_experiments; main only hands over argv.
#include <iostream>

#include "experiments/cli.h"

int main(int argc, char** argv) {
  return gopt::experiments::run_cli(argc, argv, std::cout, std::cerr);
}
