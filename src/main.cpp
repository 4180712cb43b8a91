// main.cpp: the headcount executable; everything else lives in the library.
#include <iostream>

#include "headcount/cli.h"

int main(int argc, char** argv) { return headcount::run_cli(argc, argv, std::cout, std::cerr); }
