// An agent's options as one description of its options struct's fields: each field's option
// name, member, help and range, written once. From it come the option list the registry
// holds (`gopt agents`, the config loader's checks), with the defaults taken from an
// instance of the struct, and the struct read back from checked options. So a default is
// written in one place, the struct's member initializers (or, for agents that share a
// struct, the one instance an agent starts from), and the listing cannot disagree with what
// runs. The LibTorch frontend's options structs (torch/arg.h) are the model.
//
//   struct MetisOptions {
//     double imbalance = 0.05;
//     std::uint64_t seed = 0;
//   };
//   const auto fields = OptionFields<MetisOptions>()
//       .number("imbalance", &MetisOptions::imbalance, "allowed load imbalance", 0, 10)
//       .seed(&MetisOptions::seed);
//   registry.add(describe_agent("metis", "METIS k-way partition", false, fields,
//                               MetisOptions(), [](const MetisOptions& o) { ... }));
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "agents/registry.h"
#include "core/strings.h"

namespace gopt::agents {

/// The fields of `Options` that are agent options. A field is reached through `access`: a
/// data member pointer (`&HdpOptions::groups`) or a function returning a reference to the
/// member (`[](GoOptions& g) -> auto& { return g.policy.hidden; }` for a nested struct's).
template <typename Options>
class OptionFields {
 public:
  /// The text of a field's default, from an instance of the struct.
  using DefaultText = std::function<std::string(Options&)>;
  /// Sets a field from checked options.
  using Read = std::function<void(const AgentOptions&, Options&)>;
  /// Why an instance breaks a rule between fields ("" when it does not).
  using Rule = std::function<std::string(const Options&)>;
  /// Why an instance cannot run on a cluster of `devices` devices ("" when it can).
  using ClusterRule = std::function<std::string(const Options&, std::int64_t devices)>;

  /// An integer member (any integral type), in [min, max].
  template <typename Access>
  OptionFields& integer(std::string name, Access access, std::string help, double min, double max) {
    using T = Member<Access>;
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>, "an integer member");
    if (min < static_cast<double>(std::numeric_limits<T>::min()) ||
        max > static_cast<double>(std::numeric_limits<T>::max())) {
      throw std::logic_error("option " + name + ": range wider than its member's type");
    }
    return custom(
        {name, OptionType::kInt, "", std::move(help), min, max},
        [access](Options& o) { return std::to_string(std::invoke(access, o)); },
        [access, name](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = static_cast<T>(given.get_int(name));
        });
  }

  /// A floating-point member, in [min, max].
  template <typename Access>
  OptionFields& number(std::string name, Access access, std::string help, double min, double max) {
    static_assert(std::is_same_v<Member<Access>, double>, "a double member");
    return custom(
        {name, OptionType::kDouble, "", std::move(help), min, max},
        [access](Options& o) { return option_number_text(std::invoke(access, o)); },
        [access, name](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = given.get_double(name);
        });
  }

  /// A bool member.
  template <typename Access>
  OptionFields& flag(std::string name, Access access, std::string help) {
    static_assert(std::is_same_v<Member<Access>, bool>, "a bool member");
    return custom(
        {name, OptionType::kBool, "", std::move(help)},
        [access](Options& o) { return std::string(std::invoke(access, o) ? "true" : "false"); },
        [access, name](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = given.get_bool(name);
        });
  }

  /// A std::string member (a file path); any text.
  template <typename Access>
  OptionFields& text(std::string name, Access access, std::string help) {
    static_assert(std::is_same_v<Member<Access>, std::string>, "a std::string member");
    return custom(
        {name, OptionType::kString, "", std::move(help)},
        [access](Options& o) { return std::invoke(access, o); },
        [access, name](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = given.get_string(name);
        });
  }

  /// A member of any type with operator== (an enum, a bool) set by name: one of
  /// `choices`, pairs of the option's text and the member's value.
  template <typename Access, typename T>
  OptionFields& choice(std::string name, Access access, std::string help,
                       std::vector<std::pair<std::string, T>> choices) {
    static_assert(std::is_same_v<Member<Access>, T>, "choices of the member's type");
    OptionSpec spec{name, OptionType::kString, "", std::move(help)};
    for (const auto& c : choices) spec.choices.push_back(c.first);
    return custom(
        std::move(spec),
        [access, choices, name](Options& o) {
          for (const auto& c : choices) {
            if (c.second == std::invoke(access, o)) return c.first;
          }
          throw std::logic_error("option " + name + ": the default is none of its choices");
        },
        [access, choices, name](const AgentOptions& given, Options& o) {
          for (const auto& c : choices) {
            if (c.first == given.get_string(name)) std::invoke(access, o) = c.second;
          }
        });
  }

  /// A std::vector<std::string> member as a comma-separated list of names, each one of
  /// `allowed` (empty: any name; a rule can check them).
  template <typename Access>
  OptionFields& names(std::string name, Access access, std::string help,
                      std::vector<std::string> allowed = {}) {
    static_assert(std::is_same_v<Member<Access>, std::vector<std::string>>, "a list member");
    OptionSpec spec{name, OptionType::kList, "", std::move(help)};
    spec.choices = std::move(allowed);
    return custom(
        std::move(spec), [access](Options& o) { return core::join(std::invoke(access, o), ","); },
        [access, name](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = given.get_list(name);
        });
  }

  /// The option `seed`: a 64-bit member mixed with the experiment seed, any 64-bit integer.
  template <typename Access>
  OptionFields& seed(Access access, std::string help = "mixed with the experiment seed") {
    using T = Member<Access>;
    static_assert(std::is_integral_v<T> && sizeof(T) == 8, "a 64-bit member");
    return custom(
        {"seed", OptionType::kInt, "", std::move(help), kMinSeedOption, kMaxSeedOption},
        [access](Options& o) {
          return std::to_string(static_cast<std::int64_t>(std::invoke(access, o)));
        },
        [access](const AgentOptions& given, Options& o) {
          std::invoke(access, o) = static_cast<T>(given.get_int("seed"));
        });
  }

  /// An option that is not one member: `spec` (its default_value ignored), the text of its
  /// default from a struct, and how a checked value sets the struct.
  OptionFields& custom(OptionSpec spec, DefaultText default_text, Read read) {
    fields_.push_back({std::move(spec), std::move(default_text), std::move(read)});
    return *this;
  }

  /// A rule between fields that ranges cannot express, reported on option `option`:
  /// `problem` says what was expected ("expected a divisor of hidden (64)").
  OptionFields& rule(std::string option, Rule problem) {
    rules_.push_back({std::move(option), std::move(problem)});
    return *this;
  }

  /// A rule between a field and the cluster a config runs on, reported on option `option`
  /// when the config loads ("expected at least the cluster's 8 devices").
  OptionFields& cluster_rule(std::string option, ClusterRule problem) {
    cluster_rules_.push_back({std::move(option), std::move(problem)});
    return *this;
  }

  /// These fields followed by `more`'s (shared groups of options).
  OptionFields& append(const OptionFields& more) {
    fields_.insert(fields_.end(), more.fields_.begin(), more.fields_.end());
    rules_.insert(rules_.end(), more.rules_.begin(), more.rules_.end());
    cluster_rules_.insert(cluster_rules_.end(), more.cluster_rules_.begin(),
                          more.cluster_rules_.end());
    return *this;
  }

  [[nodiscard]] bool has_cluster_rules() const { return !cluster_rules_.empty(); }

  /// The option list, in order, with the defaults of `defaults`.
  [[nodiscard]] std::vector<OptionSpec> specs(Options defaults) const {
    std::vector<OptionSpec> out;
    for (const auto& f : fields_) {
      out.push_back(f.spec);
      out.back().default_value = f.default_text(defaults);
    }
    return out;
  }

  /// `defaults` with every option of `given` (checked AgentOptions over specs(defaults))
  /// read in. Throws InputError through AgentOptions::reject when a rule is broken.
  [[nodiscard]] Options read(const AgentOptions& given, Options defaults) const {
    for (const auto& f : fields_) f.read(given, defaults);
    for (const auto& r : rules_) {
      if (auto problem = r.problem(defaults); !problem.empty()) given.reject(r.option, problem);
    }
    return defaults;
  }

  /// read(given, defaults), then the cluster rules for a cluster of `devices` devices.
  void check_cluster(const AgentOptions& given, Options defaults, std::int64_t devices) const {
    const Options options = read(given, std::move(defaults));
    for (const auto& r : cluster_rules_) {
      if (auto problem = r.problem(options, devices); !problem.empty()) {
        given.reject(r.option, problem);
      }
    }
  }

 private:
  template <typename Access>
  using Member = std::remove_reference_t<std::invoke_result_t<Access, Options&>>;

  struct Field {
    OptionSpec spec;
    DefaultText default_text;
    Read read;
  };
  struct NamedRule {
    std::string option;
    Rule problem;
  };
  struct NamedClusterRule {
    std::string option;
    ClusterRule problem;
  };
  std::vector<Field> fields_;
  std::vector<NamedRule> rules_;
  std::vector<NamedClusterRule> cluster_rules_;
};

/// A registry entry for an agent whose options are `fields` of `Options`, starting from
/// `defaults`: its option list is generated from them, its rules run when a config loads
/// (AgentInfo::check_options, check_cluster), and `make` gets the struct read from the
/// checked options.
template <typename Options, typename Make>
[[nodiscard]] AgentInfo describe_agent(std::string name, std::string description, bool learner,
                                       const OptionFields<Options>& fields, Options defaults,
                                       Make make) {
  AgentInfo info(std::move(name), std::move(description), learner, fields.specs(defaults), {});
  info.check_options = [fields, defaults](const AgentOptions& given) {
    (void)fields.read(given, defaults);
  };
  info.factory = [fields, defaults, make](const AgentOptions& given) -> std::unique_ptr<Agent> {
    return make(fields.read(given, defaults));
  };
  if (fields.has_cluster_rules()) {
    info.check_cluster = [fields, defaults](const AgentOptions& given, std::int64_t devices) {
      fields.check_cluster(given, defaults, devices);
    };
  }
  return info;
}

}  // namespace gopt::agents
