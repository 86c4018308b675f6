// The staging plan of calls on device buffers (gpu/staging.hpp): pure address arithmetic, checked here on the host
// with made-up device addresses (nothing is dereferenced).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "gpu/placement.hpp"
#include "gpu/runtime.hpp"
#include "gpu/staging.hpp"

namespace chorus::gpu {
namespace {

using algo::CollType;

// A device address that is never touched.
void* device(uintptr_t a) { return reinterpret_cast<void*>(a); }

Operation op(CollType type, uintptr_t send, uintptr_t recv, size_t count, int root = 0) {
  Operation o;
  o.type = type;
  o.send = device(send);
  o.recv = device(recv);
  o.count = count;
  o.dtype = DataType::kFloat32;
  o.root = root;
  o.onDevice = true;
  return o;
}

TEST(GpuStaging, OutOfPlaceCallReadsSendAndWritesRecv) {
  StagingPlan plan = planStaging({op(CollType::kAllReduce, 0x10000, 0x90000, 100)}, 0, 4);
  ASSERT_EQ(plan.in.size(), 1u);
  ASSERT_EQ(plan.out.size(), 1u);
  EXPECT_EQ(plan.in[0].device, device(0x10000));
  EXPECT_EQ(plan.in[0].bytes, 400u);
  EXPECT_EQ(plan.out[0].device, device(0x90000));
  EXPECT_EQ(plan.out[0].bytes, 400u);
  EXPECT_NE(plan.in[0].offset, plan.out[0].offset);
  EXPECT_EQ(plan.out[0].offset % 64, 0u);
  EXPECT_GE(plan.bytes, 800u);
}

TEST(GpuStaging, InPlaceCallsAliasInStagingAsOnTheDevice) {
  // AllReduce in place: one region.
  StagingPlan same = planStaging({op(CollType::kAllReduce, 0x10000, 0x10000, 100)}, 1, 4);
  EXPECT_EQ(same.sendAt[0], same.recvAt[0]);
  EXPECT_EQ(same.bytes, 448u);  // 400 rounded up to the 64-byte alignment
  // AllGather in place: rank 2's send block is the third block of recv.
  StagingPlan inside = planStaging({op(CollType::kAllGather, 0x10000 + 2 * 400, 0x10000, 100)}, 2, 4);
  EXPECT_EQ(inside.sendAt[0], inside.recvAt[0] + 800);
  std::byte staging[4096];
  std::vector<Operation> staged = inside.rebase(staging);
  EXPECT_EQ(static_cast<const std::byte*>(staged[0].send), static_cast<std::byte*>(staged[0].recv) + 800);
  EXPECT_FALSE(staged[0].onDevice);
}

TEST(GpuStaging, RootOnlyBuffersAreNotCopiedOnOtherRanks) {
  // Reduce: a non-root rank leaves its receive buffer alone, so nothing is copied back into it.
  StagingPlan nonRoot = planStaging({op(CollType::kReduce, 0x10000, 0x90000, 100, 0)}, 1, 4);
  EXPECT_EQ(nonRoot.in.size(), 1u);
  EXPECT_TRUE(nonRoot.out.empty());
  StagingPlan root = planStaging({op(CollType::kReduce, 0x10000, 0x90000, 100, 1)}, 1, 4);
  EXPECT_EQ(root.out.size(), 1u);
  // Broadcast: only the root reads its send buffer.
  StagingPlan leaf = planStaging({op(CollType::kBroadcast, 0x10000, 0x90000, 100, 0)}, 3, 4);
  EXPECT_TRUE(leaf.in.empty());
  EXPECT_EQ(leaf.out.size(), 1u);
}

TEST(GpuStaging, ReceiveBufferWithGapsIsReadFirst) {
  Operation v = op(CollType::kAlltoAllv, 0x10000, 0x90000, 0);
  auto layout = std::make_shared<algo::VariableLayout>();
  layout->sendCounts = {1, 2};
  layout->sendDispls = {0, 1};
  layout->recvCounts = {3, 0};
  layout->recvDispls = {5, 0};
  v.variable = layout;
  StagingPlan plan = planStaging({v}, 0, 2);
  ASSERT_EQ(plan.in.size(), 2u);  // the send buffer, and the receive buffer whose untouched bytes must go back as is
  EXPECT_EQ(plan.in[0].bytes, 12u);
  EXPECT_EQ(plan.in[1].device, device(0x90000));
  EXPECT_EQ(plan.in[1].bytes, 32u);  // up to displacement 5 + 3 floats
  ASSERT_EQ(plan.out.size(), 1u);
  EXPECT_EQ(plan.out[0].bytes, 32u);
}

TEST(GpuStaging, GroupOperationsSharingABufferShareItsRegion) {
  // Two Sends of one buffer and a Recv into an overlapping range: one region for all three.
  std::vector<Operation> ops = {op(CollType::kSend, 0x10000, 0, 100, 1), op(CollType::kSend, 0x10000, 0, 100, 2),
                                op(CollType::kRecv, 0, 0x10000 + 200, 100, 3)};
  StagingPlan plan = planStaging(ops, 0, 4);
  EXPECT_EQ(plan.sendAt[0], plan.sendAt[1]);
  EXPECT_EQ(plan.recvAt[2], plan.sendAt[0] + 200);
  EXPECT_EQ(plan.bytes, 640u);  // 600 bytes, aligned
  std::byte staging[1024];
  std::vector<Operation> staged = plan.rebase(staging);
  EXPECT_EQ(staged[0].recv, nullptr);  // a null buffer stays null
  EXPECT_EQ(staged[2].send, nullptr);
}

TEST(GpuStaging, DeviceScalarIsStagedAndReadOnceArrived) {
  Operation o = op(CollType::kAllReduce, 0x10000, 0x90000, 10);
  o.op = RedOp::preMulSumOnDevice(device(0x70000));
  StagingPlan plan = planStaging({o}, 0, 2);
  ASSERT_EQ(plan.in.size(), 2u);
  EXPECT_EQ(plan.in[1].device, device(0x70000));
  EXPECT_EQ(plan.in[1].bytes, 4u);
  alignas(64) std::byte staging[1024] = {};
  std::vector<Operation> staged = plan.rebase(staging);
  const float scalar = 0.25f;
  memcpy(staging + plan.scalarAt[0], &scalar, sizeof(scalar));  // what the stream's copy brings
  readStagedScalars(&staged);
  EXPECT_EQ(staged[0].op.scalar, 0.25);
  EXPECT_EQ(staged[0].op.scalarOnDevice, nullptr);
}

TEST(GpuPlacement, WithoutADeviceEveryBufferIsHostMemory) {
  if (available()) GTEST_SKIP() << "a CUDA device is present: device_collectives_test covers placement there";
  std::vector<float> a(10), b(10);
  Operation o = op(CollType::kAllReduce, 0, 0, 10);
  o.send = a.data();
  o.recv = b.data();
  o.onDevice = false;
  ASSERT_TRUE(placeOperation(&o, 0, 1).isOk());
  EXPECT_FALSE(o.onDevice);
  EXPECT_EQ(memoryTypeOf(a.data()), MemoryType::kHost);
  EXPECT_EQ(currentDevice(), -1);
}

}  // namespace
}  // namespace chorus::gpu
