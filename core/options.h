// The one way gopt writes an options struct: each field declared with GOPT_OPTION, a plain
// data member with its default (the one place the default is written) and a chained setter
// `with_<field>(value)`. Code reads the fields directly; agents' option tables
// (agents/option_fields.h) reach them through member pointers. Setters that need more than
// a field (a pointer to an object passed by reference) are named `with_<field>` too.
//
//   struct MetisOptions {
//     GOPT_OPTION(double, imbalance, 0.05)  ///< allowed load imbalance
//     GOPT_OPTION(std::uint64_t, seed, 0)
//   };
//   auto o = MetisOptions().with_imbalance(0.1);   // o.imbalance == 0.1
#pragma once

#include <utility>

/// A field of an options struct with its default and its chained setter `with_<name>`.
#define GOPT_OPTION(type, name, default_value) \
  type name = default_value;                   \
  auto& with_##name(type value) {              \
    name = std::move(value);                   \
    return *this;                              \
  }
