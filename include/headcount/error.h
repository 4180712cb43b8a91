// headcount/error.h: the one exception type the library throws for bad input.
//
// The core throws; only the CLI catches, once per file, and prefixes the message with the tool's
// name and the file: "headcount: error: model.onnx: truncated at byte 4096".
#pragma once

#include <stdexcept>
#include <string>

namespace headcount {

// A model that cannot be audited: missing, truncated, hostile or unsupported. The message says
// what is wrong without the file name; the caller adds it.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace headcount
