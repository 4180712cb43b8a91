// headcount/cli.h: the command line, as a function tests can call without a process.
//
// run_cli() parses argv and runs a subcommand over the library: the audit and the comparison are
// run_audit() and run_diff() (runner.h), which callers with options already in hand (the Python
// module, the fuzz harnesses) call directly.
#pragma once

#include <ostream>

namespace headcount {

// Parses argv, runs the subcommand, writes the report to `out` and errors to `err`.
// Returns the exit code: 0 ok, 1 a gate failed, 2 usage or input error.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace headcount
