// Physical quantities used across gopt and how they are spelled.
// Quantities are plain arithmetic types whose unit is in the type alias and in the
// variable name (`*_bytes`, `*_s`, `*_flops`), so hot loops stay plain arrays of numbers.
#pragma once

#include <cstdint>
#include <string>

namespace gopt::core {

/// A size in bytes. Signed, so that a negative value read from a file can be detected
/// and reported instead of wrapping around.
using Bytes = std::int64_t;
/// A count of floating-point operations (a multiply-add counts as two).
using Flops = double;
/// A duration or a point in simulated time, in seconds.
using Seconds = double;
/// A rate in bytes per second.
using BytesPerSecond = double;
/// A rate in floating-point operations per second.
using FlopsPerSecond = double;

/// Index of a node (op) in a graph: 0 .. num_nodes-1.
using NodeId = std::int32_t;
/// Index of a device in a cluster: 0 .. num_devices-1.
using DeviceId = std::int32_t;

/// "1.50 GiB", "512 B": binary prefixes, three significant digits.
[[nodiscard]] std::string format_bytes(double bytes);
/// "12.3 GFLOP": decimal prefixes.
[[nodiscard]] std::string format_flops(double flops);
/// "1.23 ms", "4.5 us", "2.00 s".
[[nodiscard]] std::string format_seconds(double seconds);

}  // namespace gopt::core
