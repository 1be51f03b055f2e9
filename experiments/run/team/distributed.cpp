#include "experiments/run/team/distributed.h"

#include <torch/torch.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(GOPT_HAVE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <charconv>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <sstream>
#include <type_traits>

#include "core/errors.h"
#include "core/strings.h"

namespace gopt::experiments {
namespace {

std::string variable(const std::string& name) { return "environment variable " + name; }

// A whole number in [low, high] (core::parse_integer), else InputError naming `name`.
int parse_int(const std::string& name, const std::string& text, long long low, long long high,
              const std::string& range_text) {
  const auto value = core::parse_integer(text);
  if (!value) {
    throw core::InputError(variable(name), "",
                           "expected a whole number " + range_text + ", found '" + text + "'");
  }
  if (*value < low || *value > high) {
    throw core::InputError(variable(name), "",
                           "expected a whole number " + range_text + ", found " + text);
  }
  return static_cast<int>(*value);
}

// The one boolean grammar (core::parse_bool; torchrun writes True or False).
bool parse_bool(const std::string& name, const std::string& text) {
  if (auto value = core::parse_bool(text)) return *value;
  throw core::InputError(variable(name), "",
                         "expected " + std::string(core::kBoolText) + ", found '" + text + "'");
}

// LibTorch's errors carry a C++ backtrace in what(); messages for people leave it out.
std::string message_of(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

std::string seconds_text(double seconds) {
  std::ostringstream s;
  s << seconds << " s";
  return s.str();
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

}  // namespace

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);
  };
}

std::optional<LaunchEnvironment> read_launch_environment(const EnvLookup& lookup) {
  // An empty variable counts as unset (`RANK= gopt run ...`), as in a shell's tests.
  auto env = [&lookup](const std::string& name) -> std::optional<std::string> {
    auto value = lookup(name);
    if (value && value->empty()) return std::nullopt;
    return value;
  };
  const auto rank = env("RANK");
  const auto world = env("WORLD_SIZE");
  if (!rank && !world) return std::nullopt;
  if (!world) {
    throw core::InputError(variable("WORLD_SIZE"), "",
                           "expected the number of processes beside RANK=" + *rank +
                               ", found it unset (start gopt with torchrun, or set RANK, "
                               "WORLD_SIZE, MASTER_ADDR and MASTER_PORT together)");
  }
  if (!rank) {
    throw core::InputError(variable("RANK"), "",
                           "expected this process's rank beside WORLD_SIZE=" + *world +
                               ", found it unset (start gopt with torchrun, or set RANK, "
                               "WORLD_SIZE, MASTER_ADDR and MASTER_PORT together)");
  }
  constexpr long long kMaxInt = std::numeric_limits<int>::max();
  LaunchEnvironment launch;
  launch.world_size = parse_int("WORLD_SIZE", *world, 1, kMaxInt, "of at least 1");
  launch.rank = parse_int(
      "RANK", *rank, 0, launch.world_size - 1,
      "from 0 to " + std::to_string(launch.world_size - 1) + " (below WORLD_SIZE=" + *world + ")");
  const auto local = env("LOCAL_RANK");
  launch.local_rank = local ? parse_int("LOCAL_RANK", *local, 0, launch.world_size - 1,
                                        "from 0 to " + std::to_string(launch.world_size - 1))
                            : launch.rank;
  const auto addr = env("MASTER_ADDR");
  const auto port = env("MASTER_PORT");
  if (launch.world_size > 1 && !addr) {
    throw core::InputError(variable("MASTER_ADDR"), "",
                           "expected the host of rank 0 (or of torchrun's agent) for "
                           "WORLD_SIZE=" +
                               *world + ", found it unset");
  }
  if (launch.world_size > 1 && !port) {
    throw core::InputError(
        variable("MASTER_PORT"), "",
        "expected the store's TCP port for WORLD_SIZE=" + *world + ", found it unset");
  }
  if (addr) launch.master_addr = *addr;
  if (port) launch.master_port = parse_int("MASTER_PORT", *port, 1, 65535, "from 1 to 65535");
  if (const auto agent = env("TORCHELASTIC_USE_AGENT_STORE")) {
    launch.agent_store = parse_bool("TORCHELASTIC_USE_AGENT_STORE", *agent);
  }
  if (const auto restarts = env("TORCHELASTIC_RESTART_COUNT")) {
    launch.restart_count =
        parse_int("TORCHELASTIC_RESTART_COUNT", *restarts, 0, kMaxInt, "of at least 0");
  }
  return launch;
}

struct Distributed::Impl {
  LaunchEnvironment launch;
  double timeout_s = 60;
  std::string backend = "gloo";
  c10::intrusive_ptr<c10d::Store> store;  // the prefixed view of the TCPStore
  // Gloo's group in every build: it carries CPU tensors. 1.13 derives it from
  // ProcessGroup, 2.x from Backend; the concrete type works with both.
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#if defined(GOPT_HAVE_C10D_NCCL)
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // CUDA tensors, when a GPU is present
#endif
  std::mutex mutex;  // one store call at a time (the heartbeat and the workers share it)
};

Distributed::Distributed(const LaunchEnvironment& launch, DistributedOptions options)
    : impl_(std::make_unique<Impl>()) {
  GOPT_ASSERT(launch.world_size > 1, "a process group needs two or more ranks");
  impl_->launch = launch;
  impl_->timeout_s = options.timeout_s;
  const auto timeout = to_ms(options.timeout_s);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(launch.master_port);
  store_options.isServer = !launch.agent_store && launch.rank == 0;
  if (store_options.isServer) store_options.numWorkers = launch.world_size;
  store_options.waitWorkers = false;  // the process group's rendezvous waits for everyone
  store_options.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> tcp;
  try {
    tcp = c10::make_intrusive<c10d::TCPStore>(launch.master_addr, store_options);
  } catch (const std::exception& e) {
    throw core::InputError(
        "environment variables MASTER_ADDR and MASTER_PORT", "",
        std::string(store_options.isServer ? "rank 0 could not host" : "could not reach") +
            " the store at " + store_text() + " within " + seconds_text(options.timeout_s) + ": " +
            message_of(e));
  }
  // Keys of an earlier attempt of the same torchrun job (a restart) are not this one's.
  impl_->store = c10::make_intrusive<c10d::PrefixStore>(
      "gopt/attempt" + std::to_string(launch.restart_count), tcp);

  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  // GLOO_SOCKET_IFNAME picks the network interface, as in PyTorch's Python frontend; else
  // the address the host name resolves to.
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname != nullptr && *ifname) {
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
  } else {
    gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  try {
    impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<c10d::PrefixStore>("gloo", impl_->store), launch.rank,
        launch.world_size, gloo_options);
  } catch (const std::exception& e) {
    throw core::Error("rank " + std::to_string(launch.rank) + ": not every one of the " +
                      std::to_string(launch.world_size) +
                      " ranks joined the process group within " + seconds_text(options.timeout_s) +
                      " (store " + store_text() + "): " + message_of(e));
  }
#if defined(GOPT_HAVE_C10D_NCCL)
  if (torch::cuda::is_available()) {
    impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
        c10::make_intrusive<c10d::PrefixStore>("nccl", impl_->store), launch.rank,
        launch.world_size);
    impl_->backend = "nccl";
  }
#endif
}

Distributed::~Distributed() = default;

int Distributed::rank() const { return impl_->launch.rank; }
int Distributed::world_size() const { return impl_->launch.world_size; }
const LaunchEnvironment& Distributed::launch() const { return impl_->launch; }
double Distributed::timeout_s() const { return impl_->timeout_s; }
const std::string& Distributed::backend() const { return impl_->backend; }

std::string Distributed::store_text() const {
  const auto& l = impl_->launch;
  return l.master_addr + ":" + std::to_string(l.master_port) +
         (l.agent_store ? " (hosted by torchrun's agent)" : " (hosted by rank 0)");
}

// Store calls: one at a time, LibTorch's errors as core::Error naming the store.
template <typename Call>
auto Distributed::store_call(Call call) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  try {
    return call(*impl_->store);
  } catch (const std::exception& e) {
    throw core::Error("the store " + store_text() + ": " + message_of(e));
  }
}

void Distributed::set(const std::string& key, const std::vector<std::uint8_t>& value) {
  store_call([&](c10d::Store& s) {
    s.set(key, value);
    return 0;
  });
}

std::optional<std::vector<std::uint8_t>> Distributed::try_get(const std::string& key) {
  return store_call([&](c10d::Store& s) -> std::optional<std::vector<std::uint8_t>> {
    if (!s.check({key})) return std::nullopt;
    return s.get(key);
  });
}

std::int64_t Distributed::add(const std::string& key, std::int64_t delta) {
  return store_call([&](c10d::Store& s) { return s.add(key, delta); });
}

bool Distributed::remove(const std::string& key) {
  return store_call([&](c10d::Store& s) { return s.deleteKey(key); });
}

bool Distributed::same_on_every_rank(std::uint64_t fingerprint) {
  // Both halves as non-negative 32-bit values in int64 lanes: lane 2k holds the maximum of
  // a half, lane 2k+1 the maximum of its negation, i.e. minus its minimum.
  const auto hi = static_cast<std::int64_t>(fingerprint >> 32);
  const auto lo = static_cast<std::int64_t>(fingerprint & 0xffffffffULL);
  std::vector<torch::Tensor> tensors{torch::tensor({hi, -hi, lo, -lo}, torch::kInt64)};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::MAX;
  try {
    auto work = impl_->gloo->allreduce(tensors, options);
    work->wait(to_ms(impl_->timeout_s));
  } catch (const std::exception& e) {
    throw core::Error("rank " + std::to_string(rank()) +
                      ": a collective over the process group failed: " + message_of(e));
  }
  const auto r = tensors[0];
  return r[0].item<std::int64_t>() == -r[1].item<std::int64_t>() &&
         r[2].item<std::int64_t>() == -r[3].item<std::int64_t>();
}

template <typename T>
void Distributed::all_reduce(T* values, std::size_t count) {
  if (count == 0) return;
  // The caller's buffer, borrowed: Gloo sums into it.
  const auto type = std::is_same_v<T, double> ? torch::kFloat64 : torch::kFloat32;
  std::vector<torch::Tensor> tensors{
      torch::from_blob(values, {static_cast<std::int64_t>(count)}, torch::TensorOptions(type))};
  try {
    auto work = impl_->gloo->allreduce(tensors, c10d::AllreduceOptions());
    work->wait(to_ms(impl_->timeout_s));
  } catch (const std::exception& e) {
    throw core::Error(
        "rank " + std::to_string(rank()) +
        ": a data-parallel update's exchange over the process group failed: " + message_of(e));
  }
}

void Distributed::all_reduce_sum(double* values, std::size_t count) { all_reduce(values, count); }

void LaunchLearners::timed(const std::function<void()>& exchange) {
  const auto start = std::chrono::steady_clock::now();
  exchange();
  exchange_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ++exchanges_;
}

void Distributed::all_reduce_sum(float* values, std::size_t count) { all_reduce(values, count); }

}  // namespace gopt::experiments
