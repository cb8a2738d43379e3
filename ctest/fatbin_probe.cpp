// memsamples_fatbin_probe <fatbin name>: prints the path locateFatbin() resolves, exactly as a
// sample would, or the list of paths tried (exit 1). Needs no driver, so CI can check that an
// installed, symlinked sample run from another folder finds its kernels.
#include <iostream>

#include "memsamples.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: memsamples_fatbin_probe <fatbin file name>\n";
    return 1;
  }
  try {
    std::cout << memsamples::locateFatbin(argv[1]) << '\n';
    return 0;
  } catch (const std::exception& error) {
    std::cerr << error.what() << '\n';
    return 1;
  }
}
