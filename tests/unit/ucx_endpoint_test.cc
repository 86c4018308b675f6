// Which UCX endpoints have a zero-copy lane, where tagged transfers pay from smaller messages: decided from
// ucp_ep_print_info's lane table, here on the text UCX 1.13 prints for the lanes it picks on one machine.
#include <gtest/gtest.h>

#include "transports/ucx/tagged_transfers.hpp"

namespace chorus::transport::ucx {
namespace {

TEST(UcxEndpoint, CrossMemoryAttachRendezvousIsZeroCopy) {
  const char* sharedMemory = R"(#
# UCP endpoint
#
#               peer: <no debug data>
#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0
#                 lane[1]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0
#
#                tag_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)
#                  rma_bw: mds rndv_rkey_size 9
)";
  EXPECT_TRUE(hasZeroCopyLane(sharedMemory));
}

TEST(UcxEndpoint, VerbsRendezvousIsZeroCopy) {
  const char* verbs =
      R"(#                 lane[0]:  1:rc_mlx5/mlx5_0:1.0 md[1]     -> md[1]/ib/sysdev[255] rma_bw#0 am am_bw#0
#                 lane[1]:  2:tcp/eth0.0 md[2]              -> md[2]/tcp/sysdev[255] wireup
)";
  EXPECT_TRUE(hasZeroCopyLane(verbs));
}

TEST(UcxEndpoint, TcpOnlyRendezvousIsNot) {
  const char* tcp =
      R"(#                 lane[0]:  1:tcp/lo.0 md[1]                -> md[1]/tcp/sysdev[255] rma_bw#0 am am_bw#0
#                 lane[1]:  2:tcp/eth0.0 md[1]              -> md[1]/tcp/sysdev[255] rma_bw#1 wireup
#                tag_send: 0..<egr/short>..8185..<egr/zcopy>..8192..<rndv>..(inf)
)";
  EXPECT_FALSE(hasZeroCopyLane(tcp));
  // A shared-memory lane that carries only active messages does not make the rendezvous zero-copy.
  EXPECT_FALSE(hasZeroCopyLane("#  lane[0]:  3:sysv/memory.0 md[2] -> md[2]/sysv/sysdev[255] am am_bw#0\n"));
  EXPECT_FALSE(hasZeroCopyLane(""));
}

}  // namespace
}  // namespace chorus::transport::ucx
