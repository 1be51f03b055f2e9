// TransferTable: slots reused last-freed-first in unobserved runs and numbered in issue
// order in observed ones, consumer lists with their spare entry, observed times, and the
// run state a delta simulation copies from a checkpoint.
#include "simulator/transfer_table.h"

#include <gtest/gtest.h>

namespace gopt::simulator {
namespace {

TEST(TransferTableTest, UnobservedRunsReuseTheLastFreedSlot) {
  TransferTable table(4);
  table.reset(/*observed=*/false);
  const auto a = table.allocate();
  const auto b = table.allocate();
  const auto c = table.allocate();
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(c, 2);
  table.free_if(/*last=*/false, a);  // a consumer still reads it: not freed
  EXPECT_EQ(table.allocate(), 3);
  table.free_if(true, a);
  table.free_if(true, c);
  EXPECT_EQ(table.allocate(), c);  // last freed, first reused
  EXPECT_EQ(table.allocate(), a);
  EXPECT_EQ(table.num_issued(), 6);
  EXPECT_EQ(table.num_slots(), 4);
}

TEST(TransferTableTest, ObservedRunsNumberTransfersInIssueOrderAndKeepTheirTimes) {
  TransferTable table(3);
  table.reset(/*observed=*/true);
  const auto a = table.allocate();
  table.record_times(1.0, 1.5);
  table.free_if(true, a);  // never reused: the id is what observers see
  const auto b = table.allocate();
  table.record_times(2.0, 2.0);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  table.set_start(b, 3.0);
  EXPECT_EQ(table.request_s(a), 1.0);
  EXPECT_EQ(table.start_s(a), 1.5);
  EXPECT_EQ(table.request_s(b), 2.0);
  EXPECT_EQ(table.start_s(b), 3.0);
  table.reset(false);  // a new run forgets them
  EXPECT_EQ(table.num_issued(), 0);
  EXPECT_EQ(table.allocate(), 0);
}

TEST(TransferTableTest, ConsumerListsHaveASpareEntryPastTheLast) {
  TransferTable table(2);  // two edges: at most two consumers, plus the spare entry
  table.reset(false);
  NodeId* consumers = table.consumers();
  consumers[0] = 7;
  consumers[1] = 8;
  consumers[2] = 9;  // the spare entry, written without a branch and not kept
  table.set_num_consumers(2);
  EXPECT_EQ(table.num_consumers(), 2);
  EXPECT_EQ(table.consumers()[1], 8);
  table.slot_transfer()[1] = 0;
  EXPECT_EQ(table.slot_transfer()[1], 0);
}

TEST(TransferTableTest, CopyRunStateRestoresLiveTransfersAndTheFreeList) {
  TransferTable base(4);
  base.reset(false);
  const auto a = base.allocate();
  const auto b = base.allocate();
  base[a].producer = 3;
  base[a].bytes = 1024;
  base[b].producer = 5;
  base.free_if(true, a);
  base.consumers()[0] = 11;
  base.set_num_consumers(1);

  TransferTable copy(4);
  copy.reset(false);
  (void)copy.allocate();  // state of another run, overwritten
  (void)copy.allocate();
  (void)copy.allocate();
  copy.copy_run_state(base);
  EXPECT_EQ(copy.num_issued(), base.num_issued());
  EXPECT_EQ(copy.num_slots(), 2);
  EXPECT_EQ(copy[b].producer, 5);
  EXPECT_EQ(copy.num_consumers(), 1);
  EXPECT_EQ(copy.consumers()[0], 11);
  // The copy continues as the base would: the freed slot first, then a new one.
  EXPECT_EQ(copy.allocate(), a);
  EXPECT_EQ(copy.allocate(), 2);
  EXPECT_EQ(base.allocate(), a);
}

}  // namespace
}  // namespace gopt::simulator
