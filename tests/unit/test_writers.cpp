#include "fabricbench/output/writers.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

// A run with every kind of record: measured out-of-place and in-place, a
// rooted op, one without a data check, and a skipped point.
RunResult fixture() {
  RunResult r;
  r.tool.version = "0.1.0";
  r.tool.git = "0123456789ab";
  r.tool.transports = {"mpi"};
  r.tool.libraries = {{"mpi_built", "Open MPI 4.1.4 (MPI 3.1)"}, {"mpi_runtime", "Open MPI v4.1.4"}};
  r.run.start_utc = "2026-01-02T03:04:05Z";
  r.run.command_line = {"fabricbench", "sweep", "--sizes", "1K,1M"};
  r.run.ranks = 4;
  r.run.nodes = 2;
  r.run.ranks_per_node = {2, 2};
  r.run.hostnames = {"node-a", "node-b"};
  r.run.transport = "mpi";
  r.run.environment = {{"NCCL_DEBUG", "WARN"}, {"OMPI_MCA_btl", "tcp,self"}};
  r.checked = true;
  r.complete = true;

  SweepRecord base;
  base.op = Op::allreduce;
  base.dtype = DType::float32;
  base.redop = RedOp::sum;
  base.bytes = 1048576;
  base.count = 262144;
  base.ranks = 4;
  Timing t;
  t.time_us = 500.0;
  t.time_min_us = 480.0;
  t.time_max_us = 520.5;
  t.p50_us = 495.25;
  t.p99_us = 610.0;
  t.cv = 0.125;
  t.algbw_gbs = 2.097152;
  t.busbw_gbs = 3.145728;
  t.iterations = 40;
  t.wrong = 0;
  base.timing = t;
  r.records.push_back(base);
  base.placement = Placement::in_place;
  base.timing->time_us = 400.0;
  base.timing->algbw_gbs = 2.62144;
  base.timing->busbw_gbs = 3.93216;
  r.records.push_back(base);

  SweepRecord bcast = r.records.front();
  bcast.op = Op::broadcast;
  bcast.redop.reset();
  bcast.root = 1;
  bcast.timing->wrong.reset();
  bcast.timing->busbw_gbs = bcast.timing->algbw_gbs;
  r.records.push_back(bcast);

  SweepRecord skipped;
  skipped.op = Op::allgather;
  skipped.dtype = DType::float32;
  skipped.bytes = 8;
  skipped.ranks = 4;
  skipped.skipped = "8 B holds fewer float elements than there are ranks (4), \"as nccl-tests\"";
  r.records.push_back(skipped);
  return r;
}

std::string golden_path(const std::string& name) { return std::string(FABRICBENCH_GOLDEN_DIR) + "/" + name; }

// Compares with the golden file; FABRICBENCH_UPDATE_GOLDEN=1 rewrites it.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (const char* update = std::getenv("FABRICBENCH_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "output differs from " << path;
}

TEST(Writers, JsonMatchesGolden) {
  std::ostringstream out;
  write_json(fixture(), out);
  expect_golden("result.json", out.str());
}

TEST(Writers, JsonHasSchemaAndStableKeyOrder) {
  const auto doc = to_json(fixture());
  EXPECT_EQ(doc.at("schema"), "fabricbench.result/1");
  std::vector<std::string> keys;
  for (const auto& item : doc.items()) keys.push_back(item.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"schema", "tool", "run", "status", "records"}));
  EXPECT_TRUE(doc["records"][2]["wrong"].is_null());
  EXPECT_FALSE(doc["records"][3].contains("busbw_gbs"));
}

TEST(Writers, JsonStatusReportsWrongData) {
  RunResult r = fixture();
  r.wrong_total = 3;
  const auto doc = to_json(r);
  EXPECT_EQ(doc["status"]["wrong_elements"], 3);
  EXPECT_EQ(doc["status"]["data_ok"], false);
}

TEST(Writers, CsvMatchesGolden) {
  std::ostringstream out;
  write_csv(fixture(), out);
  expect_golden("result.csv", out.str());
}

TEST(Writers, CsvHasOneRowPerRecordAndEqualColumns) {
  std::ostringstream out;
  const RunResult r = fixture();
  write_csv(r, out);
  std::istringstream in(out.str());
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line.rfind("start_utc,label,hostnames,op,dtype,redop,root,placement,bytes", 0), 0U);
  int rows = 0;
  while (std::getline(in, line)) ++rows;
  EXPECT_EQ(rows, static_cast<int>(r.records.size()));
}

TEST(Writers, TableMatchesGolden) {
  std::ostringstream out;
  const RunResult r = fixture();
  TableWriter table(out);
  table.point(std::span(r.records).subspan(0, 2));
  table.point(std::span(r.records).subspan(2, 1));
  table.point(std::span(r.records).subspan(3, 1));
  table.summary(r);
  expect_golden("table.txt", out.str());
}

}  // namespace
}  // namespace fabricbench
