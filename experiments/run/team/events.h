// What the ranks of a shared `gopt run` tell each other (experiments/run/team/team.h), and the
// bytes each message travels as in the store: the events a rank sends rank 0 while it runs,
// and the start and the plan rank 0 sends the others before the run. Exact, doubles bit for
// bit: the ranks of a launch run the same build.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "experiments/results/result_sink.h"

namespace gopt::experiments {

/// What one rank tells rank 0 while it runs.
struct TeamEvent {
  enum class Kind : std::uint8_t {
    kStarted,   ///< worker `worker` started item `item`
    kStep,      ///< worker `worker`'s learner finished update `step`
    kFinished,  ///< worker `worker` ended its item: `results` to write, `failures` to report
    kMessage,   ///< a progress message (`text`)
    kDone,      ///< the rank ran everything it will run (`interrupted`: it was stopped)
  };
  Kind kind = Kind::kMessage;
  int rank = 0;  ///< the sender (set by RunTeam::receive)
  int worker = 0;
  std::int64_t item = -1;
  std::int64_t step = 0;
  std::vector<RunResult> results;
  std::vector<std::pair<std::string, std::string>> failures;  ///< (job, message)
  std::string text;
  bool interrupted = false;
};

/// Bytes of an event and back, exactly (doubles bit for bit). Throws core::Error on bytes
/// that are not an event of this build.
[[nodiscard]] std::vector<std::uint8_t> encode_event(const TeamEvent& event);
[[nodiscard]] TeamEvent decode_event(const std::vector<std::uint8_t>& bytes);

/// What rank 0 tells the others before the run: the results file's finished results.
struct RunStart {
  std::vector<ResultKey> done;
};

/// Bytes of the start and back; decode_start throws core::Error as decode_event does.
[[nodiscard]] std::vector<std::uint8_t> encode_start(const RunStart& start);
[[nodiscard]] RunStart decode_start(const std::vector<std::uint8_t>& bytes);

/// Bytes of the item -> rank assignment (RankPlan::rank_of) and back; decode_plan throws
/// core::Error as decode_event does.
[[nodiscard]] std::vector<std::uint8_t> encode_plan(const std::vector<int>& rank_of);
[[nodiscard]] std::vector<std::int32_t> decode_plan(const std::vector<std::uint8_t>& bytes);

}  // namespace gopt::experiments
