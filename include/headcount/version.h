// headcount/version.h: the program's version, and the schema of the reports it writes and reads.
#pragma once

namespace headcount {

extern const char* const kVersion;  // "0.3.0"
extern const char* const kSchema;   // "headcount/2": written by --format json and jsonl, read by --baseline

}  // namespace headcount
