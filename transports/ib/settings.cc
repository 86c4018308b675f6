#include "transports/ib/settings.hpp"

#include "core/setting_parsers.hpp"

namespace chorus::transport::ib {

using namespace setting_parsers;

const Setting<std::string> kHca{
    {"CHORUS_IB_HCA", "NCCL_IB_HCA", "",
     "RDMA ports the ib transport may use: mlx5_0:1,mlx5_1 (prefixes; '=' exact names, '^' excludes); default all"},
    kAnyText,
    SettingScope::kCommunicator,
    text()};
const Setting<int64_t> kGidIndex{
    {"CHORUS_IB_GID_INDEX", "NCCL_IB_GID_INDEX", "",
     "GID index of the ib transport's port (unset: 3, RoCE v2 over IPv4, on RoCE; 0 on InfiniBand)"},
    kNonNegative,
    SettingScope::kCommunicator,
    byteCount(0, INT64_MAX, {"", -1})};
const Setting<int64_t> kBuffer{
    {"CHORUS_IB_BUFFER", "", "4194304", "bytes of each ib staging FIFO and ring (one each per direction per peer)"},
    kPositive,
    SettingScope::kCommunicator,
    byteCount(1)};

}  // namespace chorus::transport::ib
