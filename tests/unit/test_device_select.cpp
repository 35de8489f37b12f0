#include "fabricbench/transport/cuda/device_select.hpp"

#include <map>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

DeviceSelectionInput input(int local, int ranks, int visible, std::map<std::string, std::string> env = {},
                           bool shared = false) {
  DeviceSelectionInput in;
  in.group_local_rank = local;
  in.group_local_ranks = ranks;
  in.visible_devices = visible;
  in.allow_shared = shared;
  in.getenv = [env](const char* key) -> std::optional<std::string> {
    const auto it = env.find(key);
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  return in;
}

TEST(DeviceSelect, OneRankPerGpuTakesItsLocalRank) {
  for (int r = 0; r < 8; ++r) {
    const DeviceSelection s = select_device(input(r, 8, 8));
    EXPECT_TRUE(s.error.empty());
    EXPECT_EQ(s.device, r);
    EXPECT_EQ(s.local_rank_source, "shared-memory group");
    EXPECT_FALSE(s.shared);
  }
}

TEST(DeviceSelect, LauncherLocalRankWinsInOrder) {
  const DeviceSelection s = select_device(input(0, 4, 4, {{"SLURM_LOCALID", "2"}, {"LOCAL_RANK", "1"}}));
  EXPECT_EQ(s.device, 2);
  EXPECT_EQ(s.local_rank_source, "SLURM_LOCALID");
  const DeviceSelection o =
      select_device(input(0, 4, 4, {{"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"SLURM_LOCALID", "2"}}));
  EXPECT_EQ(o.device, 3);
  EXPECT_EQ(o.local_rank_source, "OMPI_COMM_WORLD_LOCAL_RANK");
}

TEST(DeviceSelect, MalformedLauncherRankIsAnError) {
  const DeviceSelection s = select_device(input(0, 2, 2, {{"LOCAL_RANK", "x1"}}));
  EXPECT_EQ(s.device, -1);
  EXPECT_NE(s.error.find("LOCAL_RANK='x1'"), std::string::npos) << s.error;
}

TEST(DeviceSelect, MoreRanksThanGpusIsAnErrorUnlessAllowed) {
  const DeviceSelection s = select_device(input(2, 4, 2));
  EXPECT_EQ(s.device, -1);
  EXPECT_NE(s.error.find("4 ranks on this node but 2 visible GPUs"), std::string::npos) << s.error;
  EXPECT_NE(s.error.find("--allow-shared-gpu"), std::string::npos);
  const DeviceSelection a = select_device(input(3, 4, 2, {}, true));
  EXPECT_TRUE(a.error.empty());
  EXPECT_EQ(a.device, 1);
  EXPECT_TRUE(a.shared);
}

TEST(DeviceSelect, OneVisibleDeviceEachDefersToUuids) {
  // Launchers that set CUDA_VISIBLE_DEVICES per task leave every rank one device 0.
  const DeviceSelection s = select_device(input(3, 4, 1));
  EXPECT_TRUE(s.error.empty());
  EXPECT_EQ(s.device, 0);
  EXPECT_TRUE(s.compare_uuids);
}

TEST(DeviceSelect, NoVisibleDevice) {
  const DeviceSelection s = select_device(input(0, 1, 0));
  EXPECT_EQ(s.device, -1);
  EXPECT_EQ(s.error, "no CUDA device is visible");
}

TEST(DeviceSelect, LauncherRankBeyondTheGroupCountsAsARankOnTheNode) {
  const DeviceSelection s = select_device(input(0, 1, 2, {{"LOCAL_RANK", "2"}}));
  EXPECT_EQ(s.device, -1);
  EXPECT_NE(s.error.find("3 ranks on this node"), std::string::npos) << s.error;
}

}  // namespace
}  // namespace fabricbench
