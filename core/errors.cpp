#include "core/errors.h"

#include <utility>

namespace gopt::core {
namespace {

std::string compose(const std::string& source, const std::string& location,
                    const std::string& problem) {
  std::string message;
  if (!source.empty()) {
    message += source;
    message += ": ";
  }
  if (!location.empty()) {
    message += location;
    message += ": ";
  }
  message += problem;
  return message;
}

}  // namespace

InputError::InputError(std::string source, std::string location, const std::string& problem)
    : Error(compose(source, location, problem)),
      source_(std::move(source)),
      location_(std::move(location)),
      problem_(problem) {}

GraphError::GraphError(std::string source, std::string location, const std::string& problem,
                       std::vector<std::string> nodes)
    : InputError(std::move(source), std::move(location), problem), nodes_(std::move(nodes)) {}

void assertion_failed(const char* expression, const char* file, int line,
                      const std::string& message) {
  throw std::logic_error(std::string("gopt internal error: ") + file + ":" + std::to_string(line) +
                         ": assertion '" + expression + "' failed: " + message);
}

}  // namespace gopt::core
