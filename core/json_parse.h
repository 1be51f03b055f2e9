// Parsing a JSON document from a user's file, for the .cpp files that read JSON formats
// (graph files, decision files). Every failure of nlohmann's parser -- a syntax error, a
// number too large for a double (1e400), a string that is not valid Unicode (a lone
// surrogate escape such as "\udfff", or ill-formed UTF-8) -- becomes an InputError naming
// the file, the field path where it happened ("nodes[2] ('relu').name"), the line and the
// column. Header-only so that nlohmann stays private to the libraries that include it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/errors.h"

namespace gopt::core {
namespace json_parse_detail {

// A SAX handler that only remembers where the parser is: the path of keys and array
// indices, and the "name" of each object seen so far. Run a second time, only on error.
class PathTracker final : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return scalar(); }
  bool boolean(bool) override { return scalar(); }
  bool number_integer(number_integer_t) override { return scalar(); }
  bool number_unsigned(number_unsigned_t) override { return scalar(); }
  bool number_float(number_float_t, const string_t&) override { return scalar(); }
  bool string(string_t& value) override {
    if (!frames_.empty() && frames_.back().object && frames_.back().key == "name") {
      frames_.back().name = value;
    }
    return scalar();
  }
  bool binary(binary_t&) override { return scalar(); }
  bool start_object(std::size_t) override {
    element_starts();
    frames_.push_back({true, {}, 0, {}});
    return true;
  }
  bool key(string_t& key) override {
    frames_.back().key = key;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    element_starts();
    frames_.push_back({false, {}, 0, {}});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

  // "nodes[2] ('relu').shape[1]": the value being parsed when the error happened.
  [[nodiscard]] std::string path() const {
    std::string out;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      const bool innermost = i + 1 == frames_.size();
      if (f.object) {
        if (!f.name.empty()) out += " ('" + f.name + "')";
        if (!f.key.empty()) out += (out.empty() ? "" : ".") + f.key;
      } else {
        // Inside a nested element, the element started already (count - 1); at the
        // innermost level the failing element has not been reported yet (count).
        std::size_t index = innermost || f.count == 0 ? f.count : f.count - 1;
        out += "[" + std::to_string(index) + "]";
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool object;
    std::string key;    // objects: the key whose value is being parsed
    std::size_t count;  // arrays: elements started so far
    std::string name;   // objects: the value of "name", when seen
  };
  void element_starts() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().count;
  }
  bool scalar() {
    element_starts();
    return true;
  }
  std::vector<Frame> frames_;
};

inline std::string line_and_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix.
inline std::string plain_message(const std::string& what) {
  for (const char* marker : {"syntax error", "number overflow", "invalid string"}) {
    if (auto pos = what.find(marker); pos != std::string::npos) return what.substr(pos);
  }
  auto pos = what.find("] ");
  return pos == std::string::npos ? what : what.substr(pos + 2);
}

}  // namespace json_parse_detail

/// Parses `text` as one JSON document; throws InputError naming `source`, the field path,
/// the line and column, and what is wrong. Strings must be valid Unicode (UTF-8; an escaped
/// surrogate only as half of a pair), numbers finite doubles or 64-bit integers.
inline nlohmann::json parse_json_document(std::string_view text, const std::string& source) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    json_parse_detail::PathTracker tracker;
    std::size_t byte = 0;
    if (const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
      byte = pe->byte > 0 ? pe->byte - 1 : 0;
    }
    (void)nlohmann::json::sax_parse(text.begin(), text.end(), &tracker);
    std::string problem = "invalid JSON at " + json_parse_detail::line_and_column(text, byte) +
                          ": " + json_parse_detail::plain_message(e.what());
    if (problem.find("surrogate") != std::string::npos) {
      problem +=
          " (strings must be valid Unicode text; an escaped surrogate such as \\udfff is "
          "only valid as half of a pair)";
    }
    throw InputError(source, tracker.path(), problem);
  }
}

}  // namespace gopt::core
