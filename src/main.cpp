// main.cpp: the headcount executable; everything else lives in the library.
#include <iostream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "headcount/cli.h"

int main(int argc, char** argv) {
#if defined(__GLIBC__) && defined(M_MMAP_THRESHOLD)
  // A model's records live in 256 KiB arena blocks and vectors of up to a few MiB. glibc maps
  // each such allocation on its own and unmaps it when freed; with the threshold at its largest
  // they come from the heap instead: about 7% less time at 1,000 and 10,000 layers, mostly
  // kernel time, for under 1 MiB more peak RSS there (3 MiB on a small hostile file whose freed
  // blocks the heap keeps). Only the executable sets it, never the library that the Python module
  // loads into someone else's process.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
  return headcount::run_cli(argc, argv, std::cout, std::cerr);
}
