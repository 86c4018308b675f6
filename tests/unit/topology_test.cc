// The topology module on real machines' files (tests/data/topologies, see its SOURCES.md): every file loads with
// the right counts and GPU-NIC locality; files with quirks load or fail with a message naming the element.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "topology/graph_xml.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/nccl_xml.hpp"
#include "topology/paths.hpp"
#include "topology/rdma_ports.hpp"
#include "topology/system.hpp"

namespace chorus::topology {
namespace {

std::string dataPath(const std::string& name) { return std::string(CHORUS_TOPOLOGIES) + "/" + name; }

struct Expected {
  const char* file;
  int gpus, nics, nvswitches, pciSwitches, cpus, nvlinks, nvlinkLanes;
};

// Counted by hand from the files. PCIe switches: each tree of bridges below a root port (NCCL's files leave root
// ports out) that leads to a GPU, NIC or NVSwitch counts once, as NCCL flattens switch hierarchies.
const Expected kFiles[] = {
    {"nccl/alibaba-hgx-a100-8gpu-6nvswitch-cx6dx-bond-roce.xml", 8, 5, 6, 4, 2, 48, 96},
    {"nccl/aws-p4d-24xlarge-a100-8gpu-efa.partial.xml", 8, 4, 0, 4, 2, 0, 0},
    {"nccl/azure-ncv4-a100-pcie-4gpu-nvlink-pairs.xml", 4, 1, 0, 0, 4, 2, 24},
    {"nccl/azure-ndv2-v100-8gpu-edr-ib.partial.xml", 8, 1, 0, 0, 2, 0, 0},
    {"nccl/azure-ndv4-a100-8gpu-hdr-ib.partial.xml", 8, 8, 0, 4, 4, 0, 0},
    {"nccl/rtx3090-8gpu-pcie-switch-cx6-ib.xml", 8, 1, 0, 2, 2, 0, 0},
    // Tesla M2075 x3 (3D controllers) and a Radeon with an OpenCL device; the Matrox BMC VGA is not a GPU.
    {"hwloc/hwloc-2s-xeon-e5-2650-tesla-m2075-connectx4-wholeio.xml", 4, 3, 0, 0, 2, 0, 0},
    // CPU-GPU and GPU-GPU NVLinks of 40 GB/s (2 lanes each) from the NVLinkBandwidth matrix.
    {"hwloc/hwloc-ibm-power8-minsky-4xP100-nvlink-cpu-gpu.xml", 4, 0, 0, 0, 2, 6, 12},
    {"hwloc/hwloc-ibm-x3950m2-4numa-96core-pci.xml", 0, 8, 0, 0, 4, 0, 0},
    // 11 NVSwitches of class 0680 and one with an all-zero class, known from the NVLink matrix.
    {"hwloc/hwloc-nvidia-dgx2h-16xV100-12nvswitch-nvlinkbw.xml", 16, 0, 12, 4, 2, 96, 96},
    {"hwloc/hwloc-sgi-uv-24numa-192core-mlx4-ib.xml", 0, 7, 0, 1, 24, 0, 0},
};

class TopologyFile : public ::testing::TestWithParam<Expected> {};

TEST_P(TopologyFile, LoadsWithTheRightCounts) {
  const Expected& e = GetParam();
  SystemGraph g;
  Status st = loadTopologyFile(dataPath(e.file), "host", &g);
  if (!haveHwloc() && std::string(e.file).rfind("hwloc/", 0) == 0) GTEST_SKIP() << "built without hwloc";
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(g.count(NodeKind::kHost), 1);
  EXPECT_EQ(g.count(NodeKind::kGpu), e.gpus);
  EXPECT_EQ(g.count(NodeKind::kNic), e.nics);
  EXPECT_EQ(g.count(NodeKind::kNvSwitch), e.nvswitches);
  EXPECT_EQ(g.count(NodeKind::kPciSwitch), e.pciSwitches);
  EXPECT_EQ(g.count(NodeKind::kCpu), e.cpus);
  EXPECT_EQ(g.countLinks(LinkKind::kNVLink), e.nvlinks);
  EXPECT_EQ(g.countLanes(LinkKind::kNVLink), e.nvlinkLanes);
  // Every CPU pair of the host is joined, and every device reaches every other one.
  EXPECT_EQ(g.countLinks(LinkKind::kInterSocket), e.cpus * (e.cpus - 1) / 2);
  const std::vector<int> gpus = g.find(NodeKind::kGpu);
  for (size_t i = 1; i < gpus.size(); ++i) {
    EXPECT_NE(widestPath(g, gpus[0], gpus[i]).type, PathType::kDisconnected) << g.node(gpus[i]).name;
  }
}

TEST_P(TopologyFile, SurvivesItsOwnXml) {
  const Expected& e = GetParam();
  if (!haveHwloc() && std::string(e.file).rfind("hwloc/", 0) == 0) GTEST_SKIP() << "built without hwloc";
  SystemGraph g;
  ASSERT_TRUE(loadTopologyFile(dataPath(e.file), "host", &g).isOk());
  SystemGraph back;
  Status st = importGraphXml(exportGraphXml(g), &back);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(back.nodes().size(), g.nodes().size());
  ASSERT_EQ(back.links().size(), g.links().size());
  EXPECT_EQ(exportGraphXml(back), exportGraphXml(g));
}

INSTANTIATE_TEST_SUITE_P(RealMachines, TopologyFile, ::testing::ValuesIn(kFiles), [](const auto& info) {
  std::string name = info.param.file;
  name = name.substr(name.find('/') + 1);
  name = name.substr(0, name.find(".xml"));
  for (char& c : name)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

// The names of the NICs closest to each GPU, by the GPU's bus id.
std::map<std::string, std::set<std::string>> railsOf(const SystemGraph& g) {
  std::map<std::string, std::set<std::string>> out;
  for (int gpu : g.find(NodeKind::kGpu)) {
    for (int nic : closestNics(g, gpu)) out[g.node(gpu).busId].insert(g.node(nic).name);
  }
  return out;
}

TEST(TopologyLocality, HgxGpuPairsShareARailNic) {
  SystemGraph g;
  ASSERT_TRUE(loadTopologyFile(dataPath("nccl/alibaba-hgx-a100-8gpu-6nvswitch-cx6dx-bond-roce.xml"), "h", &g).isOk());
  const auto rails = railsOf(g);
  const std::map<std::string, std::string> expected = {
      {"0000:13:00.0", "mlx5_bond_1"}, {"0000:19:00.0", "mlx5_bond_1"}, {"0000:48:00.0", "mlx5_bond_2"},
      {"0000:4d:00.0", "mlx5_bond_2"}, {"0000:89:00.0", "mlx5_bond_3"}, {"0000:8e:00.0", "mlx5_bond_3"},
      {"0000:ad:00.0", "mlx5_bond_4"}, {"0000:b3:00.0", "mlx5_bond_4"}};
  for (const auto& [gpu, nic] : expected) {
    EXPECT_EQ(rails.at(gpu), std::set<std::string>{nic}) << gpu;
  }
  // GPU to its rail: one PCIe switch; GPU to GPU: NVLink through the 6 switches (2 lanes of 20 GB/s each).
  const std::vector<int> gpus = g.find(NodeKind::kGpu);
  const Path nv = widestPath(g, gpus[0], gpus[7]);
  EXPECT_EQ(nv.type, PathType::kNVLink);
  EXPECT_DOUBLE_EQ(nv.bandwidth, 6 * 2 * 20.0);
  EXPECT_EQ(widestPath(g, gpus[0], closestNics(g, gpus[0]).front()).type, PathType::kPix);
}

TEST(TopologyLocality, SkeletonsPairGpusWithTheNicsOfTheirSwitch) {
  SystemGraph p4d;
  ASSERT_TRUE(loadTopologyFile(dataPath("nccl/aws-p4d-24xlarge-a100-8gpu-efa.partial.xml"), "h", &p4d).isOk());
  const auto rails = railsOf(p4d);
  EXPECT_EQ(rails.at("0000:10:1c.0"), std::set<std::string>{"0000:10:1b.0"});
  EXPECT_EQ(rails.at("0000:a0:1d.0"), std::set<std::string>{"0000:a0:1b.0"});

  SystemGraph ndv4;
  ASSERT_TRUE(loadTopologyFile(dataPath("nccl/azure-ndv4-a100-8gpu-hdr-ib.partial.xml"), "h", &ndv4).isOk());
  const auto both = railsOf(ndv4);
  EXPECT_EQ(both.at("0003:00:00.0"), (std::set<std::string>{"0103:00:00.0", "0104:00:00.0"}));
  EXPECT_EQ(both.at("000c:00:00.0"), (std::set<std::string>{"0105:00:00.0", "0106:00:00.0"}));
}

TEST(TopologyLocality, PcieOnlyBoxReachesItsNicOnlyFromOneSocket) {
  SystemGraph g;
  ASSERT_TRUE(loadTopologyFile(dataPath("nccl/rtx3090-8gpu-pcie-switch-cx6-ib.xml"), "h", &g).isOk());
  const std::vector<int> gpus = g.find(NodeKind::kGpu);
  const int nic = g.find(NodeKind::kNic).front();
  EXPECT_EQ(widestPath(g, gpus[0], nic).type, PathType::kSys);
  EXPECT_EQ(widestPath(g, gpus[4], nic).type, PathType::kPix);
  EXPECT_EQ(widestPath(g, gpus[0], gpus[1]).type, PathType::kPix);
  EXPECT_EQ(widestPath(g, gpus[0], gpus[4]).type, PathType::kSys);
}

TEST(TopologyLocality, Power8GpusTalkToTheirSocketOverNvlink) {
  if (!haveHwloc()) GTEST_SKIP() << "built without hwloc";
  SystemGraph g;
  ASSERT_TRUE(loadTopologyFile(dataPath("hwloc/hwloc-ibm-power8-minsky-4xP100-nvlink-cpu-gpu.xml"), "h", &g).isOk());
  const std::vector<int> gpus = g.find(NodeKind::kGpu);
  const Path pair = widestPath(g, gpus[0], gpus[1]);
  EXPECT_EQ(pair.type, PathType::kNVLink);
  EXPECT_DOUBLE_EQ(pair.bandwidth, 40.0);
  EXPECT_EQ(widestPath(g, gpus[0], gpus[2]).type, PathType::kSys);
}

TEST(TopologyMultiHost, TwoHgxHostsMeetOverTheirRailNics) {
  SystemGraph one;
  ASSERT_TRUE(
      loadTopologyFile(dataPath("nccl/alibaba-hgx-a100-8gpu-6nvswitch-cx6dx-bond-roce.xml"), "hgx", &one).isOk());
  SystemGraph two = replicateHost(one, 2);
  EXPECT_EQ(two.count(NodeKind::kHost), 2);
  EXPECT_EQ(two.count(NodeKind::kGpu), 16);
  EXPECT_EQ(two.count(NodeKind::kNetwork), 1);
  EXPECT_EQ(two.countLinks(LinkKind::kNetwork), 10);
  const std::vector<int> ranks = placeRanks(two, {8, 8}, true);
  ASSERT_EQ(ranks.size(), 16u);
  const Path across = widestPath(two, ranks[0], ranks[8]);
  EXPECT_EQ(across.type, PathType::kNet);
  EXPECT_DOUBLE_EQ(across.bandwidth, 200 / 8.0);  // a 200 Gbit/s port
  EXPECT_EQ(widestPath(two, ranks[0], ranks[1]).type, PathType::kNVLink);
  EXPECT_FALSE(oversubscribed(two, {8, 8}));
}

TEST(TopologyMultiHost, HostMemoryRanksAndOversubscription) {
  SystemGraph g;
  ASSERT_TRUE(loadTopologyFile(dataPath("nccl/rtx3090-8gpu-pcie-switch-cx6-ib.xml"), "box", &g).isOk());
  EXPECT_EQ(g.node(g.find(NodeKind::kHost).front()).cores, 64);  // two 32-bit masks of 32 cores
  SystemGraph two = replicateHost(g, 2);
  const std::vector<int> ranks = placeRanks(two, {2, 2}, false);
  EXPECT_EQ(two.node(ranks[0]).kind, NodeKind::kCpu);
  EXPECT_EQ(widestPath(two, ranks[0], ranks[1]).type, PathType::kSys);  // round-robin over the two sockets
  EXPECT_EQ(widestPath(two, ranks[0], ranks[2]).type, PathType::kNet);
  EXPECT_FALSE(oversubscribed(two, {2, 2}));
  EXPECT_TRUE(oversubscribed(two, {65, 1}));
}

TEST(TopologyLocal, DiscoversThisHost) {
  SystemGraph g;
  Status st = discoverLocalHost("here", &g);
  ASSERT_TRUE(st.isOk()) << st.message();
  ASSERT_EQ(g.count(NodeKind::kHost), 1);
  EXPECT_GE(g.count(NodeKind::kCpu), 1);
  const int cores = g.node(g.find(NodeKind::kHost).front()).cores;
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, sysconf(_SC_NPROCESSORS_ONLN));
}

// --- quirks: each loads, or fails with a message that names the element.

Status loadNccl(const std::string& text, SystemGraph* g) { return importNcclXml(text, "h", g); }

const char* kOneGpu = R"(<system version="1">
  <cpu numaid="0" affinity="0000000f">
    <pci busid="0000:01:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16">
      <gpu dev="0" sm="80" rank="0" gdr="1">%s</gpu>
    </pci>
  </cpu>
</system>)";

std::string oneGpu(const std::string& inside) {
  char text[1024];
  snprintf(text, sizeof(text), kOneGpu, inside.c_str());
  return text;
}

TEST(TopologyQuirks, SelfLoopNvlinkIsIgnored) {
  SystemGraph g;
  Status st = loadNccl(oneGpu(R"(<nvlink target="0000:01:00.0" count="4" tclass="0x030200"/>)"), &g);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(g.count(NodeKind::kGpu), 1);
  EXPECT_EQ(g.countLinks(LinkKind::kNVLink), 0);
}

TEST(TopologyQuirks, NvlinkToAMissingDeviceIsIgnored) {
  SystemGraph g;
  ASSERT_TRUE(loadNccl(oneGpu(R"(<nvlink target="0000:99:00.0" count="2" tclass="0x030200"/>)"), &g).isOk());
  EXPECT_EQ(g.countLinks(LinkKind::kNVLink), 0);
}

TEST(TopologyQuirks, MissingAndEmptyAttributesFallBackToDefaults) {
  SystemGraph g;
  Status st = loadNccl(R"(<system version="1"><cpu><pci busid="0000:01:00.0" class="0x030000" link_speed=""
      link_width="0"/><pci busid="0000:02:00.0"/></cpu><cpu/></system>)",
                       &g);
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(g.count(NodeKind::kCpu), 2);
  EXPECT_EQ(g.count(NodeKind::kGpu), 1);  // the device without a class is not on any path
  EXPECT_EQ(g.node(g.find(NodeKind::kCpu)[1]).numa, 1);
  for (const Link& l : g.links()) {
    if (l.kind == LinkKind::kPCIe) {
      EXPECT_DOUBLE_EQ(l.bandwidth, 12.0);
    }
  }
}

void expectError(const std::string& text, const std::string& mentions) {
  SystemGraph g;
  Status st = loadNccl(text, &g);
  ASSERT_FALSE(st.isOk()) << "loaded: " << text;
  EXPECT_NE(st.message().find(mentions), std::string::npos) << st.message();
}

TEST(TopologyQuirks, BadFilesFailNamingTheElement) {
  expectError("<system version=\"1\">\n  <cpu numaid=\"zero\"/>\n</system>", "<cpu numaid=\"zero\"> at line 2");
  expectError("<system version=\"1\">\n<cpu>\n<pci class=\"0x030200\"/></cpu></system>", "without a busid");
  expectError(oneGpu(R"(<nvlink count="2"/>)"), "<nvlink count=\"2\"> at line 4");
  expectError(oneGpu(R"(<nvlink target="0000:02:00.0" count="two"/>)"), "count=\"two\" is not an integer");
  expectError("<system version=\"1\"/>", "no <cpu> element");
  expectError("<machine/>", "root element is <machine>");
  expectError("this is not XML", "not well-formed XML");
  expectError("<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\"", "line 3");
}

TEST(TopologyQuirks, UnreadableFilesFailNamingTheFile) {
  SystemGraph g;
  Status st = loadTopologyFile("/nonexistent/topo.xml", "h", &g);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("/nonexistent/topo.xml"), std::string::npos);

  char path[] = "/tmp/chorus_topo_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string newer = "<?xml version=\"1.0\"?>\n<topology version=\"3.0\"><object type=\"Machine\"/></topology>";
  ASSERT_EQ(write(fd, newer.data(), newer.size()), static_cast<ssize_t>(newer.size()));
  close(fd);
  st = loadTopologyFile(path, "h", &g);
  unlink(path);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("hwloc"), std::string::npos) << st.message();
}

// NCCL_TOPO_FILE as an attacker or a broken disk writes it, in each format chorus reads: cut short, nested far
// past any machine, with entities that expand a billion-fold, and larger than any topology. Each ends in an error
// naming the file, in bounded time and memory, and nothing crashes.
TEST(TopologyQuirks, HostileFilesFailNamingTheFile) {
  char dir[] = "/tmp/chorus_hostile_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  auto load = [&](const std::string& name, const std::string& text) {
    const std::string path = std::string(dir) + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    SystemGraph g;
    Status st = loadTopologyFile(path, "h", &g);
    unlink(path.c_str());
    return st;
  };
  const std::string laughs =
      "<?xml version=\"1.0\"?>\n<!DOCTYPE system [<!ENTITY a \"aaaaaaaaaa\">"
      "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">"
      "<!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;\"><!ENTITY e \"&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;\">"
      "<!ENTITY f \"&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;\"><!ENTITY g \"&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;\">"
      "<!ENTITY h \"&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;\"><!ENTITY i \"&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;\">]>\n";
  std::string deepPci, deepObject;
  for (int i = 0; i < 100000; ++i) deepPci += "<pci busid=\"0000:01:00." + std::to_string(i % 8) + "\">";
  for (int i = 0; i < 100000; ++i) deepObject += "<object type=\"Group\">";
  const std::pair<std::string, std::string> files[] = {
      {"cut_nccl.xml", "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0000:01"},
      {"cut_hwloc.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n<object type=\"Machine\" os_index"},
      {"cut_own.xml", "<chorus-topology version=\"1\">\n<node kind="},
      {"deep_nccl.xml", "<system version=\"1\"><cpu numaid=\"0\">" + deepPci},
      {"deep_hwloc.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\"><object type=\"Machine\">" + deepObject},
      {"laughs_nccl.xml", laughs + "<system version=\"1\"><cpu numaid=\"0\" arch=\"&i;\"/></system>"},
      {"laughs_hwloc.xml",
       laughs + "<topology version=\"2.0\"><object type=\"Machine\" os_index=\"0\"><info name=\"x\" value=\"&i;\"/>"
                "</object></topology>"},
      {"huge.xml", "<system version=\"1\"><!--" + std::string(80 << 20, 'x') + "--></system>"},
  };
  for (const auto& [name, text] : files) {
    const auto start = std::chrono::steady_clock::now();
    Status st = load(name, text);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10) << name;
    if (name == "laughs_nccl.xml") {  // NCCL's format is read without a DTD: the entity stays unexpanded text
      EXPECT_TRUE(st.isOk()) << st.message();
      continue;
    }
    EXPECT_FALSE(st.isOk()) << name << " loaded";
    EXPECT_NE(st.message().find(name), std::string::npos) << name << ": " << st.message();
    if (name == "huge.xml") {
      EXPECT_NE(st.message().find("more than any topology"), std::string::npos) << st.message();
    }
  }
  rmdir(dir);
}

TEST(TopologyQuirks, OwnFormatChecksReferences) {
  SystemGraph g;
  Status st = importGraphXml(
      "<chorus-topology version=\"1\"><node id=\"0\" kind=\"host\" name=\"a\"/>\n"
      "<node id=\"1\" kind=\"gpu\" host=\"0\" name=\"g\"/>\n<link a=\"0\" b=\"7\" kind=\"pcie\" bandwidth=\"1\"/>"
      "</chorus-topology>",
      &g);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("<link a=\"0\"> at line 3"), std::string::npos) << st.message();
  SystemGraph h;
  st = importGraphXml("<chorus-topology version=\"1\"><node id=\"0\" kind=\"toaster\"/></chorus-topology>", &h);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("unknown node kind \"toaster\""), std::string::npos) << st.message();
}

// A verbs device's ports as the kernel's RDMA tree shows them (the figures ibv_query_port gives).
void writePort(const std::string& root, const std::string& device, int port, const std::string& state,
               const std::string& rate, const std::string& linkLayer) {
  const std::string dir = root + "/" + device + "/ports/" + std::to_string(port);
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  std::ofstream(dir + "/state") << state << "\n";
  std::ofstream(dir + "/rate") << rate << "\n";
  std::ofstream(dir + "/link_layer") << linkLayer << "\n";
}

TEST(TopologyRdma, NicsTakeTheSpeedAndLinkLayerOfTheirBestActivePort) {
  const std::string root = ::testing::TempDir() + "rdma-" + std::to_string(getpid());
  writePort(root, "mlx5_0", 1, "4: ACTIVE", "100 Gb/sec (4X EDR)", "InfiniBand");
  writePort(root, "mlx5_0", 2, "1: DOWN", "200 Gb/sec (4X HDR)", "InfiniBand");
  writePort(root, "mlx5_1", 1, "4: ACTIVE", "25 Gb/sec (1X EDR)", "Ethernet");
  writePort(root, "mlx5_1", 2, "4: ACTIVE", "50 Gb/sec (2X EDR)", "Ethernet");
  writePort(root, "mlx5_2", 1, "1: DOWN", "100 Gb/sec (4X EDR)", "InfiniBand");

  std::vector<RdmaPort> ports = rdmaPorts("mlx5_0", root);
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].number, 1);
  EXPECT_TRUE(ports[0].active);
  EXPECT_DOUBLE_EQ(ports[0].gbps, 100);
  EXPECT_FALSE(ports[1].active);
  EXPECT_DOUBLE_EQ(ports[1].gbps, 200);

  RdmaPort best;
  ASSERT_TRUE(bestActiveRdmaPort("mlx5_0", &best, root));  // the faster port is down
  EXPECT_EQ(best.number, 1);
  EXPECT_EQ(best.linkLayer, "InfiniBand");
  ASSERT_TRUE(bestActiveRdmaPort("mlx5_1", &best, root));
  EXPECT_EQ(best.number, 2);
  EXPECT_DOUBLE_EQ(best.gbps, 50);
  EXPECT_EQ(best.linkLayer, "Ethernet");
  EXPECT_FALSE(bestActiveRdmaPort("mlx5_2", &best, root));  // no active port
  EXPECT_FALSE(bestActiveRdmaPort("mlx5_9", &best, root));  // no such device
  EXPECT_TRUE(rdmaPorts("mlx5_9", root).empty());
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
}

TEST(TopologyRdma, LinkLayerSurvivesTheOwnXml) {
  SystemGraph g;
  Node host;
  host.kind = NodeKind::kHost;
  host.name = "h";
  const int h = g.addNode(host);
  Node nic;
  nic.kind = NodeKind::kNic;
  nic.host = h;
  nic.name = "mlx5_0";
  nic.speedGbps = 200;
  nic.linkLayer = "Ethernet";
  g.addNode(nic);
  SystemGraph back;
  ASSERT_TRUE(importGraphXml(exportGraphXml(g), &back).isOk());
  ASSERT_EQ(back.count(NodeKind::kNic), 1);
  const Node& n = back.node(back.find(NodeKind::kNic).front());
  EXPECT_EQ(n.linkLayer, "Ethernet");
  EXPECT_DOUBLE_EQ(n.speedGbps, 200);
}

}  // namespace
}  // namespace chorus::topology
