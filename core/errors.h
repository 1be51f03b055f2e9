// Typed errors for user, config and input problems (STYLE.md point 8).
// Every message names where the problem is (file, field or node), what was expected and
// what was found. Internal invariants use GOPT_ASSERT instead; expected outcomes such
// as out-of-memory are return values, never exceptions.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace gopt::core {

/// Base of every error gopt reports to a user. `what()` is the full message.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input read from a file or given on the command line: malformed syntax, a
/// missing or mistyped field, a value out of range.
/// `source` is the file (or "<string>"), `location` the field path or node, e.g.
/// `nodes[3].flops` or `node 'dense/MatMul'`; either may be empty.
class InputError : public Error {
 public:
  InputError(std::string source, std::string location, const std::string& problem);

  [[nodiscard]] const std::string& source() const { return source_; }
  [[nodiscard]] const std::string& location() const { return location_; }
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  std::string source_;
  std::string location_;
  std::string problem_;
};

/// A graph that is not a valid computation graph: a cycle, a dangling edge, a duplicate
/// name, a negative size. `nodes` lists the node names involved (for a cycle, the nodes
/// on it in order).
class GraphError : public InputError {
 public:
  GraphError(std::string source, std::string location, const std::string& problem,
             std::vector<std::string> nodes = {});

  [[nodiscard]] const std::vector<std::string>& nodes() const { return nodes_; }

 private:
  std::vector<std::string> nodes_;
};

/// Throws std::logic_error: an internal invariant was broken (a bug in gopt, not bad
/// input). Used through GOPT_ASSERT.
[[noreturn]] void assertion_failed(const char* expression, const char* file, int line,
                                   const std::string& message);

}  // namespace gopt::core

/// Checks an internal invariant in every build type (cheap checks only; never in a hot
/// loop). A failure is a gopt bug and reports the expression and the place.
#define GOPT_ASSERT(expr, message)                                          \
  do {                                                                      \
    if (!(expr)) {                                                          \
      ::gopt::core::assertion_failed(#expr, __FILE__, __LINE__, (message)); \
    }                                                                       \
  } while (false)
