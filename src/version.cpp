// version.cpp: the version the build names, and the report schema.
#include "headcount/version.h"

namespace headcount {

const char* const kVersion = HEADCOUNT_VERSION;
const char* const kSchema = "headcount/2";

}  // namespace headcount
