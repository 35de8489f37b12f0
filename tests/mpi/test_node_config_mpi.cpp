// The configuration gather on real MPI ranks: ranks with identical records
// send one, the silent ranks join it, and a rank with its own environment
// keeps its own record and is named.

#include <gtest/gtest.h>

#include "fabricbench/analysis/config_rules.hpp"
#include "fabricbench/comm/layout.hpp"
#include "fabricbench/topology/node_config.hpp"

namespace fabricbench {
namespace {

ConfigInputs inputs_with(std::vector<std::string> environment) {
  ConfigInputs in;  // the real sysfs and procfs: the same for every rank of this machine
  in.environment = std::move(environment);
  in.memlock = MemlockLimit{};
  return in;
}

std::string named(const Anomaly& a) { return a.kind + " " + a.host + (a.device.empty() ? "" : " " + a.device); }
std::string said(const Anomaly& a) { return named(a) + ": " + a.detail; }

TEST(NodeConfigMpi, IdenticalRanksShareOneRecord) {
  const Comm world = Comm::world();
  const Layout layout = discover_layout(world);
  std::vector<std::string> notes;
  const auto configs = gather_configuration(world, layout, inputs_with({"NCCL_DEBUG=WARN", "PATH=/bin"}), notes);
  EXPECT_TRUE(notes.empty());
  ASSERT_EQ(configs.size(), 1U);
  std::vector<int> all(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) all[static_cast<std::size_t>(r)] = r;
  EXPECT_EQ(configs[0].ranks, all);
  EXPECT_EQ(configs[0].host, this_hostname());
  EXPECT_EQ(configs[0].environment, (std::map<std::string, std::string>{{"NCCL_DEBUG", "WARN"}}));
  // What the rules find depends on this machine (two interfaces NCCL would
  // use with different MTUs are a finding on any node), so the test asks
  // only that the one record is judged as the whole node's: every finding
  // names this host and no rank.
  for (const Anomaly& a : check_configuration(configs)) {
    EXPECT_EQ(a.host, this_hostname()) << a.kind << ": " << a.detail;
    EXPECT_EQ(a.device, "") << a.kind << ": " << a.detail;
    EXPECT_NE(a.kind, "setting_drift") << a.detail;
  }
}

TEST(NodeConfigMpi, TheLastRankWithItsOwnEnvironmentIsNamed) {
  const Comm world = Comm::world();
  if (world.size() < 3) GTEST_SKIP() << "needs a majority: 3 ranks or more";
  const Layout layout = discover_layout(world);
  const int last = world.size() - 1;
  std::vector<std::string> env{"NCCL_DEBUG=WARN"};
  if (world.rank() == last) env.emplace_back("NCCL_ALGO=Ring");
  std::vector<std::string> notes;
  const auto configs = gather_configuration(world, layout, inputs_with(env), notes);
  ASSERT_EQ(configs.size(), 2U);
  EXPECT_EQ(configs[1].ranks, std::vector<int>{last});
  EXPECT_EQ(configs[1].environment.at("NCCL_ALGO"), "Ring");
  // The rank's own variable comes first, named on that rank; then what the
  // machine itself has (interfaces of different MTUs, say), found alike on
  // both records and so said once for the node: the shared record judged
  // alone.
  const auto found = check_configuration(configs);
  const std::string rank = "rank " + std::to_string(last);
  std::vector<std::string> expected{"setting_drift " + this_hostname() + " " + rank,
                                    "nccl_forced " + this_hostname() + " " + rank};
  for (const Anomaly& a : check_configuration({configs[0]})) expected.push_back(said(a));
  std::vector<std::string> seen;
  for (const Anomaly& a : found) seen.push_back(seen.size() < 2 ? named(a) : said(a));
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace fabricbench
