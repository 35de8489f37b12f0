// The result model against its schema and its golden files: what the writer
// emits and what the schema describes agree both ways, files read back and
// write out byte for byte, and the CSV's columns are the JSON's names.

#include "fabricbench/results/result_json.hpp"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fabricbench/analysis/ladders.hpp"
#include "fabricbench/core/error.hpp"
#include "fabricbench/core/json_layout.hpp"
#include "fabricbench/records/topology_json.hpp"
#include "fabricbench/results/reader.hpp"
#include "fabricbench/results/result_csv.hpp"
#include "fabricbench/results/schema_validate.hpp"

namespace fabricbench {
namespace {

using json = nlohmann::json;

std::string golden_path(const std::string& name) { return std::string(FABRICBENCH_GOLDEN_DIR) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every member of every record set, every optional present: what the writer
// can emit at most (a measured and a skipped record, since they differ).
RunResult fully_populated() {
  RunResult r;
  r.tool = {"fabricbench", "0.1.0", "0123456789ab", {"mpi", "nccl"}, {{"nccl_runtime", "2.21.5"}}};
  r.run.start_utc = "2026-01-02T03:04:05Z";
  r.run.label = "provider-a";
  r.run.command_line = {"fabricbench", "run", "--label", "provider-a"};
  r.run.ranks = 2;
  r.run.nodes = 2;
  r.run.ranks_per_node = {1, 1};
  r.run.hostnames = {"a", "b"};
  r.run.rank_nodes = {0, 1};
  r.run.transport = "nccl";
  // Bytes that are not UTF-8 in a value and in a name: "byte_strings".
  r.run.environment = {{"NCCL_DEBUG", "WARN"}, {"NCCL_SOCKET_IFNAME", "eth\xff"}, {"NCCL_\xfe", "1"}};
  r.run.devices = {"rank 0: a GPU 0", "rank 1: b GPU 0"};
  r.run.cost = PriceInfo{2.5, 20.0, "EUR"};
  r.run.rank_time = RankTime::max;
  r.complete = false;  // ended early, so the reason is there too
  r.end_reason = "interrupted by SIGINT";
  r.checked = true;
  r.duration_s = 12.5;

  SweepRecord measured;
  measured.redop = RedOp::sum;
  measured.root = 0;
  measured.bytes = 1024;
  measured.count = 256;
  measured.ranks = 2;
  measured.timing = Timing{10, 9, 11, 10, 12, 0.1, 0.1024, 0.1024, 100, false, 0, 0.01, false};
  measured.cost = PointCost{0.25, 0.5, 0.75, 1.0, 0.125, 0.0625, 2.6875, 3, 5};
  measured.cut = "budget";        // fewer iterations than asked
  measured.first_iterations = 3;  // and measured again, still short of --min-iters
  measured.choice = AlgorithmChoice{"RING", "LL128", ""};
  measured.nic_wire = NicWireRate{0.0128, "ring", 8};
  r.records.push_back(measured);
  SweepRecord skipped = measured;
  skipped.timing.reset();
  skipped.cut.clear();
  skipped.first_iterations.reset();
  skipped.choice.reset();
  skipped.nic_wire.reset();
  skipped.cost.reset();
  skipped.skipped = "too small";
  r.records.push_back(skipped);
  r.sweep_cost = SweepCost{4.0, 0.25, 0.5, 0.75, 2.0, 0.125, 0.0625, 0.03125, 0.28125, 2};

  ScaleResult s;
  s.bytes = 1024;
  s.ranks_per_node = 1;
  s.nic_gbit_per_node = 400;
  LevelResult level;
  level.nodes_per_group = 2;
  level.ranks_per_group = 2;
  level.groups.push_back({0, {0, 1}, {"a", "b"}, 2, 10, 0.2, 0});
  level.busbw_min_gbs = 0.2;
  level.busbw_median_gbs = 0.2;
  level.efficiency = 1;
  level.ceiling_gbs = 50;
  level.ceiling_fraction = 0.004;
  level.warning = "a warning";
  s.levels.push_back(level);
  s.projection_input = ProjectionInput{1024, 100, 0.5, true};
  s.projection.push_back({2, 2, 1, 101, 1.98, 0.99});
  r.scaling = s;

  GpuLadderResult gl;
  gl.gpus_per_node = 2;
  gl.bytes = 1024;
  gl.from_topology = true;
  gl.note = "a note";
  GpuLevelResult gpu_level;
  gpu_level.gpus = 2;
  gpu_level.choice = GpuSetChoice::closest;
  gpu_level.bytes = 1024;
  gpu_level.path = "NV12";
  gpu_level.sets.push_back({0, "a", {0, 1}, "NV12", 10, 0.2, 0});
  gpu_level.busbw_min_gbs = 0.2;
  gpu_level.busbw_median_gbs = 0.2;
  gpu_level.efficiency = 1;
  gl.levels.push_back(gpu_level);
  gl.projection_input = ProjectionInput{1024, 100, 0.5, false};
  gl.projection.push_back({2, GpuSetChoice::closest, 1, 101, 1.98, 0.99, std::nullopt, std::nullopt});
  price_gpu_ladder(gl, 1000, 2.0, {{2, 5.0}, {4, 9.0}});
  r.gpu_ladder = gl;

  PairsResult p;
  p.bytes = 1024;
  p.small_bytes = 8;
  p.rounds = {0};
  p.mode = "random";
  p.seed = 7;
  p.rounds_planned = 2;
  p.ranks_per_node = 2;
  p.hosts = {"a", "b"};
  p.nodes = PairMatrix(2);
  p.nodes.bw(0, 1) = 10;
  p.nodes.lat(0, 1) = 2;
  p.nodes.smaller(0, 1) = 1 << 20;
  p.intra = {PairMatrix(2), PairMatrix(2)};
  p.intra[0].bw(1, 0) = 100;
  p.intra[0].smaller(1, 0) = 1 << 20;
  p.rails = {PairMatrix(2), PairMatrix(2)};
  p.rails[1].bw(0, 1) = 5;
  p.rails[1].smaller(0, 1) = 1 << 20;
  p.rails[1].lat(1, 0) = 7;
  r.pairs = p;
  P2PSweepResult sweep;
  sweep.ranks = {0, 1};
  sweep.hosts = {"a", "b"};
  sweep.window = 64;
  sweep.records.push_back({P2PTest::latency, 8, 1, 4, 2, 0.004, 1000, 0});
  sweep.records.push_back({P2PTest::bibandwidth, 8, 64, 64, 1, 0.016, 1000, std::nullopt});
  r.p2p_sweep = sweep;
  r.findings.push_back({FindingKind::slow_link,
                        {0, 1},
                        {"a", "b"},
                        10,
                        20,
                        "slow link a -> b",
                        FindingMetric::latency,
                        400.0,
                        100.0,
                        true,
                        {{{0, 1}, {"a", "b"}, 9.0, 410.0, true}},
                        1});
  r.unconfirmed.push_back({FindingKind::slow_nic,
                           {1},
                           {"b"},
                           0,
                           20,
                           "not confirmed: no figure for b",
                           FindingMetric::no_figure,
                           90.0,
                           100.0,
                           false,
                           {{{1, 0}, {"b", "a"}, 10.0, 95.0, false}},
                           0});
  r.health = HealthResult{1 << 20, 8, 1.5, r.findings, r.unconfirmed};
  {
    PaceRound round{
        40, 8 << 20, 16, 0.3, {RankPace{0, 0, 0, 1000, 4, 6, 80, 90}, RankPace{1, 1, 0, 5200, 36, 38, 4100, 4150}}};
    Straggler late{StragglerKind::slow_rank,
                   {1},
                   1,
                   "b",
                   40,
                   38,
                   36,
                   4100,
                   4150,
                   5200,
                   1000,
                   true,
                   29,
                   30,
                   "rank 1 (b local rank 0) came late to the all-reduce in 38 of 40 iterations"};
    Straggler u = late;
    u.kind = StragglerKind::slow_rank_node;
    u.confirmed = false;
    u.again_late = 12;
    u.message = "not confirmed: " + u.message;
    r.stragglers = StragglersResult{{round, round}, {late}, {u}, "4 of 8 ranks came late", "8 ranks share 2 cores"};
  }
  r.budget =
      BudgetRecord{60, 1.5, {{Phase::health, 6, 1.5}, {Phase::pairs, 20, 20}}, {{Phase::pairs, "round 1", "skipped"}}};
  ModelParallelResult mp;
  mp.tp = 1;
  mp.pp = 2;
  mp.nodes = 2;
  mp.gpus = 2;
  mp.hidden = 16;
  mp.seq = 4;
  mp.micro_batches = 4;
  mp.layers = 2;
  mp.compute_ms = 10;
  mp.activation_bytes = 128;
  mp.tp_allreduce = TpAllReduce{128, DType::float32, 2, 1, 5, 6, 0};
  mp.pp_link = PpLink{0, 1, 2, 10, 2.0128};
  mp.projection = ModelParallelPoint{5, 0.5, 0.016, 1.4, 0.2, 7, 1.4, 0.7};
  mp.skipped = "not skipped, but every field is written";
  r.model_parallel = mp;
  IslandsResult islands;
  islands.islands = {{"A", {0}, {"a"}}, {"B", {1}, {"b"}}};
  islands.in_island_latency_us = 2;
  islands.cross_island_latency_us = 20;
  islands.ratio = 10;
  islands.min_ratio = 2;
  islands.message = "2 latency islands";
  r.islands = islands;
  BisectionResult bisection;
  bisection.bytes = 1024;
  bisection.seed = 7;
  bisection.ranks_per_node = 1;
  HalvingResult halving;
  halving.half_a = {0};
  halving.source = "islands";
  halving.half_b = {1};
  halving.pairs.push_back({0, 1, "a", "b", 10.0, 5.0});
  halving.isolated_gbs = 10;
  halving.loaded_gbs = 5;
  halving.oversubscription = 2;
  bisection.halvings.push_back(halving);
  bisection.oversubscription = 2;
  bisection.limit = 1.25;
  bisection.blocking = true;
  bisection.message = "the fabric is 2.00:1 oversubscribed";
  r.bisection = bisection;
  StorageResult storage;
  storage.path = "/scratch";
  storage.io_mode = "buffered";
  storage.io_note = "the file system refuses O_DIRECT";
  storage.file_bytes = 4096;
  storage.block_bytes = 4096;
  storage.files_written = 2;
  storage.files_removed = 1;
  storage.files_left = {"/scratch/.fabricbench-storage-b-r1-AbC123"};
  storage.bytes_written = 8192;
  storage.bytes_read = 8192;
  storage.write_s = 1;
  storage.read_s = 0.5;
  storage.write_gbs = 8.192e-6;
  storage.read_gbs = 1.6384e-5;
  storage.nodes = {{0, "a", 1, 4096, 1, 0.5, 4.096e-6, 8.192e-6}, {1, "b", 1, 4096, 0.5, 0.25, 8.192e-6, 1.6384e-5}};
  storage.slowest_write_node = 0;
  storage.slowest_read_node = 0;
  storage.message = "2 files of 4 KiB on 2 nodes";
  r.storage = storage;

  ClusterTopology t;
  NodeTopology n;
  n.host = {"a", "cpu", 2, 64, 128, 1u << 30, 2, "os", "kernel", "550"};
  GpuInfo g;
  g.index = 0;
  g.pci_bus_id = "0000:18:00.0";
  g.name = "GPU";
  g.uuid = "GPU-0";
  g.memory_bytes = 1u << 30;
  g.sm_count = 100;
  g.numa_node = 0;
  g.pcie = {5, 5, 16, 16};
  g.nvlinks.push_back({0, true, 4, "0000:19:00.0", LinkPeer::gpu});
  g.mig_mode = "disabled";
  g.ecc_mode = "enabled";
  g.h2d_gbs = 50;
  g.d2h_gbs = 50;
  g.local_copy_gbs = 1000;
  g.root_port = "0000:15:01.0";
  g.pcie_switches = {"0000:16:00.0"};
  g.mig_instances = 0;
  g.virtualization = "passthrough";
  n.gpus.push_back(g);
  n.gpu_status = "no GPU visible (test)";
  NicInfo nic;
  nic.name = "mlx5_0";
  nic.kind = NicKind::infiniband;
  nic.pci_address = "0000:1a:00.0";
  nic.bus = NicBus::pci;
  nic.driver = "mlx5_core";
  nic.numa_node = 0;
  nic.firmware = "1.0";
  nic.ports.push_back({1, "ACTIVE", "LinkUp", 400, "InfiniBand"});
  nic.netdevs = {"ib0"};
  nic.speed_gbps = 400;
  nic.mtu = 4096;
  nic.operstate = "up";
  n.nics.push_back(nic);
  n.gpudirect = {GdrStatus::ready, "nvidia_peermem", true};
  n.gpu_matrix = {{"X"}};
  n.nic_matrix = {{"PIX"}};
  n.nearest_nic.push_back({"0000:18:00.0", "mlx5_0", PciPath::pix});
  n.p2p_access = {{true}};
  n.p2p_rank = {{0}};
  n.d2d_gbs = {{100.0}};
  n.method = "copy";
  n.notes = {"note"};
  PcieBridge b;
  b.pci_bus_id = "0000:16:00.0";
  b.role = BridgeRole::switch_upstream;
  b.parent = "0000:15:01.0";
  b.link = {5, 5, 16, 16};
  b.gpus = {"0000:18:00.0"};
  b.occupied_ports = 2;
  b.uplink_gbs = 63;
  b.downstream_gbs = 126;
  b.oversubscription = 2;
  b.acs = AcsState::unknown;
  b.acs_control = 0;
  b.acs_unknown = "config space beyond 64 bytes is readable by root only";
  n.pcie_bridges.push_back(b);
  n.iommu = IommuInfo{IommuMode::translated, 1, 4, {"DMA-FQ"}, {"intel_iommu=on"}};
  n.virtualization = Virtualization{true, "KVM", "QEMU Standard PC", 3};
  n.host_copy_contention.push_back({"all GPUs", "0000:16:00.0", CopyDirection::host_to_device, {0}, {50.0}, {25.0}});
  n.contention_method = "copies";
  t.nodes.push_back(n);
  t.groups.push_back({"signature", {"a"}});
  t.anomalies.push_back({"nic_slow", "a", "mlx5_0 port 1", "slow"});
  t.notes = {"note"};
  NodeConfig c;
  c.host = "a";
  c.ranks = {0};
  c.nccl_version = "2.21.5";
  c.nccl_version_source = "ncclGetVersion";
  c.nccl_net_plugin = "libnccl-net.so";
  c.nccl_tuner_plugin = "none";
  c.nccl_plugins_found = {"libnccl-net.so"};
  c.cuda_driver = "12.4";
  c.cuda_runtime = "12.4";
  c.nvidia_driver = "550.54.15";
  c.kernel = "6.1.0";
  c.libibverbs = "1.14.50.0";
  c.ofed = "MLNX_OFED_LINUX-23.10-1.1.9.0";
  c.mlx5_core = "23.10-1.1.9";
  c.nic_firmware = {{"mlx5_0", "28.39.1002"}};
  c.environment = {{"NCCL_DEBUG", "WARN"}};
  c.nccl_conf = {{"NCCL_IB_HCA", "mlx5"}};
  c.nccl_conf_files = {"/etc/nccl.conf"};
  c.memlock_bytes = 65536;
  c.memlock_unlimited = false;
  c.interfaces.push_back({"eth0", 1500, "up"});
  c.nccl_interfaces = {"eth0"};
  RdmaPortConfig port;
  port.device = "mlx5_0";
  port.state = "ACTIVE";
  port.link_layer = "InfiniBand";
  port.pkeys = {"0xffff"};
  port.gid_type = "RoCE v2";
  c.rdma_ports.push_back(port);
  c.notes = {"note"};
  t.configuration.push_back(c);
  r.topology = t;
  NcclRankUsage u;
  u.rank = 0;
  u.host = "a";
  u.version = "2.21.5+cuda12.4";
  u.git = "master v2.21.5-1";
  u.network = "IB";
  u.net_plugin = "NCCL RDMA Plugin v8";
  u.nics = {"mlx5_0:1/IB"};
  u.gdr = true;
  u.paths = {{PeerClass::across_nodes, "NET/IB/0/GDRDMA", 4}};
  u.coll_channels = 2;
  u.nvls_channels = 0;
  u.p2p_channels = 2;
  u.nvls = false;
  u.environment = {{"NCCL_IB_HCA", "mlx5"}};
  u.warnings = {"a warning"};
  u.diagnostics = {"NCCL DIAG [OK]   p2p: all 2 directed GPU P2P edges verified"};
  r.nccl = NcclUsage{{u}, {"rank 1: not captured"}};
  Verdict v = make_verdict(Level::warn, VerdictKind::finding, "b", "slow node b");
  v.hosts = {"b"};
  v.cause_kind = "slow_node";
  v.cause = "every link of b is slow";
  v.fix = "leave b out";
  v.evidence = {{"links of b", 0.1, "GB/s"}};
  v.source = "the pair matrix";
  r.verdicts = {v};
  return r;
}

// The schema node `node` resolved through $ref.
const json& resolve(const json& schema, const json& node) {
  const json* at = &node;
  while (at->contains("$ref")) at = &schema.at(json::json_pointer(at->at("$ref").get<std::string>().substr(1)));
  return *at;
}

// The property schemas of an object schema, with those of its
// allOf/anyOf/oneOf branches.
void properties_of(const json& schema, const json& node, std::map<std::string, const json*>& out) {
  const json& n = resolve(schema, node);
  if (const auto p = n.find("properties"); p != n.end())
    for (auto it = p->begin(); it != p->end(); ++it) out.emplace(it.key(), &it.value());
  for (const char* combinator : {"allOf", "anyOf", "oneOf"})
    if (const auto c = n.find(combinator); c != n.end())
      for (const json& branch : *c) properties_of(schema, branch, out);
}

// Walks `doc` along `node`: every emitted key must be a schema property,
// every required one present; records which properties were seen.
void walk(const json& schema, const json& node, const json& doc, const std::string& path, std::set<std::string>& seen,
          std::vector<std::string>& problems) {
  const json& n = resolve(schema, node);
  if (doc.is_array()) {
    if (const auto items = n.find("items"); items != n.end())
      for (std::size_t i = 0; i < doc.size(); ++i)
        walk(schema, *items, doc[i], path + "/" + std::to_string(i), seen, problems);
    return;
  }
  if (!doc.is_object()) return;
  std::map<std::string, const json*> properties;
  properties_of(schema, n, properties);
  const auto additional = n.find("additionalProperties");
  const bool free_form = additional != n.end() && additional->is_object();
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const auto p = properties.find(it.key());
    if (p == properties.end()) {
      if (free_form)
        walk(schema, *additional, it.value(), path + "/" + it.key(), seen, problems);
      else
        problems.push_back(path + "/" + it.key() + ": emitted, not in the schema");
      continue;
    }
    seen.insert(path + "/" + it.key());
    walk(schema, *p->second, it.value(), path + "/" + it.key(), seen, problems);
  }
  if (const auto required = n.find("required"); required != n.end())
    for (const json& key : *required)
      if (!doc.contains(key.get<std::string>()))
        problems.push_back(path + "/" + key.get<std::string>() + ": required by the schema, not emitted");
}

// Every property path the schema allows, with array items as "/*".
void schema_paths(const json& schema, const json& node, const std::string& path, std::set<std::string>& out,
                  int depth = 0) {
  if (depth > 12) return;
  const json& n = resolve(schema, node);
  if (const auto items = n.find("items"); items != n.end()) schema_paths(schema, *items, path + "/*", out, depth + 1);
  std::map<std::string, const json*> properties;
  properties_of(schema, n, properties);
  for (const auto& [key, sub] : properties) {
    out.insert(path + "/" + key);
    schema_paths(schema, *sub, path + "/" + key, out, depth + 1);
  }
  if (const auto a = n.find("additionalProperties"); a != n.end() && a->is_object())
    schema_paths(schema, *a, path + "/*", out, depth + 1);
}

std::string star_indices(const std::string& path) {
  std::string out;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    out += "/" + (part.find_first_not_of("0123456789") == std::string::npos ? std::string("*") : part);
  }
  return out;
}

TEST(ResultModel, EveryEmittedFieldIsInTheSchemaAndEveryRequiredOneIsEmitted) {
  const json schema = json::parse(result_schema_text());
  const json doc = json::parse(to_json(fully_populated()).dump());
  std::set<std::string> seen;
  std::vector<std::string> problems;
  walk(schema, schema, doc, "", seen, problems);
  EXPECT_TRUE(problems.empty()) << ::testing::PrintToString(problems);
  const std::vector<SchemaError> errors = SchemaValidator(schema).validate(doc);
  EXPECT_TRUE(errors.empty()) << errors.front().path << ": " << errors.front().message;
}

TEST(ResultModel, EverySchemaFieldIsEmittedByAFullyPopulatedResult) {
  const json schema = json::parse(result_schema_text());
  const json doc = json::parse(to_json(fully_populated()).dump());
  std::set<std::string> seen;
  std::vector<std::string> problems;
  walk(schema, schema, doc, "", seen, problems);
  std::set<std::string> emitted;
  for (const std::string& path : seen) emitted.insert(star_indices(path));
  std::set<std::string> described;
  schema_paths(schema, schema, "", described);
  std::vector<std::string> never;
  for (const std::string& path : described)
    if (!emitted.count(path) && path.find("/*") != path.size() - 2) never.push_back(path);
  EXPECT_TRUE(never.empty()) << "in the schema, never written: " << ::testing::PrintToString(never);
}

// The walk above must be able to fail: a key the schema lacks, and a
// required key missing, are both named.
TEST(ResultModel, TheAgreementWalkNamesStrayAndMissingFields) {
  const json schema = json::parse(result_schema_text());
  json doc = json::parse(to_json(fully_populated()).dump());
  doc["records"][0]["busbw_GBps"] = 1;
  doc["run"].erase("hostnames");
  std::set<std::string> seen;
  std::vector<std::string> problems;
  walk(schema, schema, doc, "", seen, problems);
  EXPECT_EQ(problems, (std::vector<std::string>{"/records/0/busbw_GBps: emitted, not in the schema",
                                                "/run/hostnames: required by the schema, not emitted"}));
}

TEST(ResultModel, FullyPopulatedResultRoundTripsThroughReadAndWrite) {
  const std::string text = to_json(fully_populated()).dump(2);
  const RunResult back = result_from_json(json::parse(text), "full.json");
  EXPECT_EQ(to_json(back).dump(2), text);
  EXPECT_EQ(back.run.label, "provider-a");
  EXPECT_EQ(back.run.rank_time, RankTime::max);
  ASSERT_TRUE(back.p2p_sweep);
  EXPECT_EQ(back.p2p_sweep->records.at(1).test, P2PTest::bibandwidth);
}

// write_json streams the node records, the pair links and the links
// within each node; the text is the whole document laid out all the same,
// with each of them present, empty or absent.
TEST(ResultModel, TheStreamedFileIsTheDocumentLaidOut) {
  const auto both_ways = [](const RunResult& r) {
    std::ostringstream streamed;
    write_json(r, streamed);
    std::ostringstream whole;
    write_json_layout(to_json(r), whole);
    EXPECT_EQ(streamed.str(), whole.str());
    return streamed.str();
  };
  RunResult r = fully_populated();
  const std::string text = both_ways(r);
  EXPECT_NE(text.find("\"links\": [\n"), std::string::npos);
  EXPECT_NE(text.find("\"nodes\": [\n"), std::string::npos);
  r.pairs->nodes = PairMatrix(2);  // no link measured
  r.pairs->intra.clear();
  r.topology->nodes.clear();
  const std::string empty = both_ways(r);
  EXPECT_NE(empty.find("\"links\": []"), std::string::npos);
  EXPECT_NE(empty.find("\"intra_node\": []"), std::string::npos);
  EXPECT_NE(empty.find("\"nodes\": []"), std::string::npos);
  r.pairs.reset();
  r.topology.reset();
  both_ways(r);
  for (const char* name : {"run_a.json", "run_b.json"}) both_ways(read_result_file(golden_path(name)));
}

TEST(ResultModel, GoldenFilesRoundTripByteForByte) {
  for (const char* name :
       {"result.json", "run_a.json", "run_a2.json", "run_b.json", "run_healthy.json", "run_slow.json"}) {
    const std::string text = slurp(golden_path(name));
    std::ostringstream out;
    write_json(read_result_file(golden_path(name)), out);
    // The first line that differs, rather than two whole files.
    std::istringstream written(out.str());
    std::istringstream golden(text);
    std::string w;
    std::string g;
    int line = 0;
    while (true) {
      ++line;
      const bool more_w = static_cast<bool>(std::getline(written, w));
      const bool more_g = static_cast<bool>(std::getline(golden, g));
      if (!more_w && !more_g) break;
      ASSERT_EQ(w, g) << name << ":" << line << " does not read back and write out unchanged";
    }
    EXPECT_EQ(out.str(), text) << name;
  }
}

TEST(ResultModel, IntegersAreRangeCheckedInTheirOwnType) {
  json doc = json::parse(slurp(golden_path("result.json")));
  doc["records"][2]["root"] = 4294967296LL;  // valid to the schema, not an int
  try {
    (void)result_from_json(doc, "r.json");
    FAIL() << "read an out-of-range root";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "r.json: records/2/root: 4294967296 is not an integer from -2147483648 to 2147483647");
  }
}

TEST(ResultModel, CsvColumnsAreTheRunIdentityThenTheJsonNames) {
  const RunResult r = fully_populated();
  const nlohmann::ordered_json doc = to_json(r);
  std::vector<std::string> expected = {"start_utc", "label", "hostnames"};
  for (auto it = doc["records"][0].begin(); it != doc["records"][0].end(); ++it) expected.push_back(it.key());
  // The measured record has no "skipped"; it stands before the last column.
  expected.insert(expected.end() - 1, "skipped");
  EXPECT_EQ(record_csv_columns(), expected);
  for (const SweepRecord& record : r.records) EXPECT_EQ(record_csv_row(r.run, record).size(), expected.size());
  const std::vector<CsvCell> row = record_csv_row(r.run, r.records[1]);
  EXPECT_EQ(row[0].text, "2026-01-02T03:04:05Z");
  EXPECT_EQ(row[1].text, "provider-a");
  EXPECT_EQ(row[2].text, "a b");
  EXPECT_EQ(row[row.size() - 2].text, "too small");
  EXPECT_EQ(row.back().text, "");  // never measured again
}

}  // namespace
}  // namespace fabricbench
