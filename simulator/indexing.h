// Small helpers of the simulator's hot loops: indices as size_t without sign extension,
// and branch-free selection for data-dependent conditions. Internal to gopt_simulator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gopt::simulator {

/// An index (never negative) as a size_t. Through the unsigned type of the same width, so
/// that a 32-bit index costs no sign extension (x86 zero-extends 32-bit values for free).
template <typename I>
std::size_t at(I i) {
  return static_cast<std::size_t>(static_cast<std::make_unsigned_t<I>>(i));
}

/// `condition ? a : b` for integers, computed with masks: compilers turn a ?: on an
/// unpredictable condition into a branch, which mispredicts about half the time.
template <typename T>
T select(bool condition, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U mask = U{0} - static_cast<U>(condition);
  return static_cast<T>(static_cast<U>(b) ^ ((static_cast<U>(a) ^ static_cast<U>(b)) & mask));
}
template <typename T>
T* select(bool condition, T* a, T* b) {
  return reinterpret_cast<T*>(
      select(condition, reinterpret_cast<std::uintptr_t>(a), reinterpret_cast<std::uintptr_t>(b)));
}

}  // namespace gopt::simulator
