#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/results/result_json.hpp"

#include "fabricbench/analysis/report.hpp"
#include "fabricbench/output/output.hpp"
#include "fabricbench/output/printer.hpp"
#include "fabricbench/output/sections.hpp"
#include "fabricbench/results/reader.hpp"
#include "fabricbench/results/result_csv.hpp"

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

// A result with every section a CSV file is written for: the slow-node
// fixture (ladder, pairs, findings, projection) with a GPU ladder, islands,
// a bisection, a health pass and storage added.
RunResult every_section() {
  RunResult r = read_result_file(golden_path("run_slow.json"));
  GpuLadderResult g;
  g.gpus_per_node = 8;
  g.bytes = 256 << 20;
  GpuLevelResult l;
  l.gpus = 2;
  l.choice = GpuSetChoice::closest;
  l.bytes = g.bytes;
  l.path = "NV18";
  l.sets = {{0, "mu-x", {0, 1}, "NV18", 900.5, 370.25, 0}, {1, "mu-y", {0, 1}, "NV18", 901, 369.75, 0}};
  l.busbw_min_gbs = 369.75;
  l.busbw_median_gbs = 370;
  l.efficiency = 1.0;
  g.levels.push_back(l);
  g.projection = {{2, GpuSetChoice::closest, 3.5, 123.5, 1.94, 0.97, std::nullopt, std::nullopt}};
  r.gpu_ladder = g;
  IslandsResult islands;
  islands.islands = {{"A", {0, 1}, {"mu-x", "mu-y"}}};
  islands.in_island_latency_us = 4.5;
  islands.message = "one island";
  r.islands = islands;
  BisectionResult b;
  b.bytes = 64 << 20;
  HalvingResult h;
  h.half_a = {0};
  h.half_b = {1};
  h.pairs = {{0, 1, "mu-x", "mu-y", 376.0, 25.0}};
  h.oversubscription = 15.04;
  b.halvings.push_back(h);
  r.bisection = b;
  HealthResult health;
  health.findings = r.findings;
  r.health = health;
  StorageResult s;
  s.path = "/shared/scratch";
  s.io_mode = "direct";
  s.files_written = 2;
  s.bytes_written = std::uint64_t{2} << 30;
  s.write_s = 2;
  s.read_s = 1;
  s.write_gbs = 1.073741824;
  s.read_gbs = 2.147483648;
  s.nodes = {{0, "mu-x", 1, 1 << 30, 2, 1, 0.536870912, 1.073741824},
             {1, "mu-y", 1, 1 << 30, 1.5, 0.5, 0.7158, 2.1475}};
  r.storage = s;
  ModelParallelResult mp;
  mp.tp = 2;
  mp.pp = 2;
  mp.dp = 4;
  mp.nodes = 2;
  mp.gpus = 16;
  mp.compute_ms = 480;
  mp.projection = ModelParallelPoint{120, 6.5, 1.25, 30, 0.2, 157.75, 12.17, 0.76};
  r.model_parallel = mp;
  return r;
}

TEST(Writers, EverySectionHasACsvTableWithTheRunsIdentity) {
  const RunResult r = every_section();
  const std::vector<CsvTable> tables = section_csv_tables(r);
  std::vector<std::string> names;
  std::string all;
  for (const CsvTable& t : tables) {
    names.push_back(t.section);
    ASSERT_GE(t.columns.size(), 4U) << t.section;
    EXPECT_EQ(t.columns[0], "start_utc") << t.section;
    EXPECT_EQ(t.columns[1], "label") << t.section;
    EXPECT_EQ(t.columns[2], "hostnames") << t.section;
    ASSERT_FALSE(t.rows.empty()) << t.section;
    for (const std::vector<CsvCell>& row : t.rows) {
      ASSERT_EQ(row.size(), t.columns.size()) << t.section;
      EXPECT_EQ(row[1].text, "slow-node") << t.section;
    }
    std::ostringstream out;
    write_csv_table(t, out);
    all += "== " + t.section + "\n" + out.str();
  }
  EXPECT_EQ(names, csv_section_names());
  expect_golden("result_sections.txt", all);
  // A result with records only has no section table.
  EXPECT_TRUE(section_csv_tables(fixture()).empty());
}

TEST(Writers, SectionCsvPathsSitBesideTheRecords) {
  EXPECT_EQ(section_csv_path("out/r.csv", "ladder"), "out/r.ladder.csv");
  EXPECT_EQ(section_csv_path("r", "pairs"), "r.pairs.csv");
  EXPECT_EQ(section_csv_path(".csv", "pairs"), ".csv.pairs.csv");
}

TEST(Writers, TableMatchesGolden) {
  std::ostringstream out;
  RunResult r = fixture();
  r.records[1].timing->distribution_from_second_batch = true;  // the in-place allreduce: p99 marked
  TablePrinter table(out);
  table.point(std::span(r.records).subspan(0, 2));
  table.point(std::span(r.records).subspan(2, 1));
  table.point(std::span(r.records).subspan(3, 1));
  table.summary(r);
  expect_golden("table.txt", out.str());
}

// nccl-tests' parsers split a row on blanks and read fixed fields: size count
// type redop root, then time algbw busbw #wrong twice. Ours follow after.
TEST(Writers, TableKeepsNcclTestsColumnOrder) {
  std::ostringstream out;
  const RunResult r = fixture();
  TablePrinter table(out);
  table.point(std::span(r.records).subspan(0, 2));
  std::istringstream in(out.str());
  std::string line, header, row;
  while (std::getline(in, line)) {
    if (line.find("#wrong") != std::string::npos) header = line;
    if (!line.empty() && line[0] != '#') row = line;
  }
  std::istringstream h(header.substr(1));
  std::vector<std::string> names;
  for (std::string w; h >> w;) names.push_back(w);
  const std::vector<std::string> want{"size",  "count",  "type", "redop", "root",  "time",   "algbw",
                                      "busbw", "#wrong", "time", "algbw", "busbw", "#wrong", "p50",
                                      "p99",   "iters",  "p50",  "p99",   "iters"};
  EXPECT_EQ(names, want);
  std::istringstream cells(row);
  std::vector<std::string> v;
  for (std::string w; cells >> w;) v.push_back(w);
  ASSERT_EQ(v.size(), want.size());
  EXPECT_EQ(v[0], "1048576");
  EXPECT_EQ(v[5], "500.00");  // out-of-place time
  EXPECT_EQ(v[7], "3.15");    // out-of-place busbw
  EXPECT_EQ(v[9], "400.00");  // in-place time
  EXPECT_EQ(v[11], "3.93");   // in-place busbw
  EXPECT_EQ(v[15], "40");     // iterations
}

TEST(Writers, TableSettingsHeaderAndClosingAverage) {
  std::ostringstream out;
  RunResult r = fixture();
  RunConfig config;
  config.iterations.warmup = 3;
  config.iterations.fixed_iters = 50;
  TablePrinter table(out);
  table.context(config, r.run);
  table.summary(r);
  const std::string text = out.str();
  EXPECT_NE(text.find("# Settings: warm-up 3 iterations; iterations fixed, 50 per size; check on; graph off"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# Ranks (host memory, no GPU)\n#   node-a: 2 ranks\n#   node-b: 2 ranks\n"), std::string::npos)
      << text;
  // (3.145728 + 3.93216 + 2.097152) / 3 over the three timed records.
  EXPECT_NE(text.find("# Avg bus bandwidth    : 3.05835 \n"), std::string::npos) << text;
  r.run.transport = "nccl";
  r.run.devices = {"rank 0: node-a GPU 0 H100", "rank 1: node-a GPU 1 H100"};
  std::ostringstream gpu;
  TablePrinter(gpu).context(config, r.run);
  EXPECT_NE(gpu.str().find("# Using devices\n#   rank 0: node-a GPU 0 H100\n#   rank 1: node-a GPU 1 H100\n"),
            std::string::npos)
      << gpu.str();
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> v;
  for (std::string w; in >> w;) v.push_back(w);
  return v;
}

// --format nccl-tests: nccl-tests' 13 columns and widths, -1 for no root,
// N/A unchecked, a skipped point as a comment, one footer per op.
TEST(Writers, NcclTestsFormatRowsAndFooterPerOp) {
  std::ostringstream out;
  const RunResult r = fixture();
  RunConfig config;
  config.sizes = {8, 1048576};
  config.size_range = SizeRange{8, 1048576, 2.0};
  config.iterations.warmup = 3;
  config.iterations.fixed_iters = 50;
  config.min_bw_gbs = 3.0;
  NcclTestsPrinter printer(out);
  printer.context(config, r.run);
  printer.point(std::span(r.records).subspan(0, 2));
  printer.point(std::span(r.records).subspan(2, 1));
  printer.point(std::span(r.records).subspan(3, 1));
  printer.finalize(Report{});
  const std::string text = out.str();
  EXPECT_EQ(text.rfind("# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 3 iters: 50 "
                       "agg iters: 1 validation: 1 graph: 0\n#\n# Using host memory",
                       0),
            0U)
      << text;
  std::istringstream in(text);
  std::vector<std::string> rows;
  std::vector<std::string> avgs;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') rows.push_back(line);
    if (line.rfind("# Avg bus bandwidth", 0) == 0) avgs.push_back(line);
  }
  ASSERT_EQ(rows.size(), 2U) << text;
  EXPECT_EQ(rows[0],
            "     1048576        262144     float     sum      -1   500.00    2.10    3.15       0   400.00    2.62    "
            "3.93       0");
  const std::vector<std::string> bcast = words(rows[1]);
  ASSERT_EQ(bcast.size(), 13U);
  EXPECT_EQ(bcast[4], "1");
  EXPECT_EQ(bcast[8], "N/A");
  EXPECT_EQ(bcast[9], "-");  // no in-place broadcast measured
  EXPECT_EQ(words(rows[0])[13 - 6], "3.15");
  EXPECT_EQ(words(rows[0])[13 - 2], "3.93");
  // (3.145728 + 3.93216) / 2, then 2.097152, each judged against 90% of 3.
  ASSERT_EQ(avgs.size(), 3U) << text;
  EXPECT_EQ(avgs[0], "# Avg bus bandwidth    : 3.53894 OK");
  EXPECT_EQ(avgs[1], "# Avg bus bandwidth    : 2.09715 FAILED");
  EXPECT_EQ(avgs[2], "# Avg bus bandwidth    : N/A (no size measured)");  // all-gather: all skipped
  EXPECT_NE(text.find("# Collective test starting: all_reduce_perf\n"), std::string::npos);
  EXPECT_NE(text.find("# Collective test concluded: broadcast_perf\n"), std::string::npos);
  EXPECT_NE(text.find("# skipped 8 B float: 8 B holds fewer"), std::string::npos) << text;
  EXPECT_NE(
      text.find("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
                "algbw   busbw  #wrong \n"),
      std::string::npos)
      << text;
}

TEST(Writers, NcclTestsBinaryNames) {
  EXPECT_EQ(nccl_tests_binary(Op::allreduce), "all_reduce_perf");
  EXPECT_EQ(op_of_nccl_tests_binary("reduce_scatter_perf"), Op::reducescatter);
  EXPECT_EQ(op_of_nccl_tests_binary("fabricbench"), std::nullopt);
}

// Records every call, so the multiplex's order can be seen.
class Recorder final : public Printer {
 public:
  Recorder(std::string tag, std::vector<std::string>& log) : tag_(std::move(tag)), log_(&log) {}
  void header(const ToolInfo& tool, const RunInfo&) override { log_->push_back(tag_ + " header " + tool.version); }
  void cut(const Cut& c) override { log_->push_back(tag_ + " cut " + c.what); }
  void context(const RunConfig&, const RunInfo& run) override { log_->push_back(tag_ + " context " + run.transport); }
  void progress(const SweepRecord&, std::size_t done, std::size_t) override {
    log_->push_back(tag_ + " progress " + std::to_string(done));
  }
  void point(std::span<const SweepRecord> p) override { log_->push_back(tag_ + " point " + std::to_string(p.size())); }
  void storage(const StorageResult& s) override { log_->push_back(tag_ + " storage " + s.message); }
  void budget(const BudgetRecord& b, std::optional<double>) override {
    log_->push_back(tag_ + " budget " + std::to_string(b.cuts.size()));
  }
  void finalize(const Report& report) override {
    log_->push_back(tag_ + " finalize " + std::to_string(report.runs.size()));
  }

 private:
  std::string tag_;
  std::vector<std::string>* log_;
};

TEST(Printers, MultiplexHandsEveryStepToEachPrinterInOrder) {
  std::vector<std::string> log;
  PrinterMultiplex all;
  all.add(std::make_unique<Recorder>("a", log));
  all.add(std::make_unique<Recorder>("b", log));
  EXPECT_EQ(all.size(), 2U);
  const RunResult r = fixture();
  all.header(r.tool, r.run);
  all.context(RunConfig{}, r.run);
  all.progress(r.records.front(), 0, 4);
  all.point(std::span(r.records).subspan(0, 2));
  all.cut(Cut{Phase::sweep, "allreduce 1 MiB", "skipped"});
  StorageResult storage;
  storage.message = "ok";
  all.storage(storage);
  all.budget(BudgetRecord{}, std::nullopt);
  Report report;
  report.runs.push_back({"r.json", r, {}, Level::ok, {}});
  all.finalize(report);
  EXPECT_EQ(log, (std::vector<std::string>{
                     "a header 0.1.0", "b header 0.1.0", "a context mpi", "b context mpi", "a progress 0",
                     "b progress 0", "a point 2", "b point 2", "a cut allreduce 1 MiB", "b cut allreduce 1 MiB",
                     "a storage ok", "b storage ok", "a budget 0", "b budget 0", "a finalize 1", "b finalize 1"}));
}

TEST(Printers, TerminalPrinterNamesTheRunItsNodesAndEachCut) {
  const RunResult r = fixture();
  std::ostringstream out;
  TerminalPrinter terminal(out);
  terminal.header(r.tool, r.run);
  terminal.cut(Cut{Phase::ladder, "level 2", "skipped"});
  EXPECT_EQ(out.str(),
            "# fabricbench 0.1.0 (git 0123456789ab) transport mpi: 4 ranks on 2 nodes\n"
            "#   node 0 node-a: 2 ranks\n"
            "#   node 1 node-b: 2 ranks\n"
            "# cut (budget): ladder: level 2 skipped\n");
}

// The terminal safe printer passes every step on, escaped.
TEST(Printers, TerminalSafePrinterEscapesEverySection) {
  RunResult r = fixture();
  r.run.hostnames[1] = "node-b\x1b]0;title\x07";
  std::ostringstream out;
  const auto safe =
      make_terminal_safe_printer(out, [](std::ostream& o) { return std::make_unique<TerminalPrinter>(o); });
  safe->header(r.tool, r.run);
  StorageResult storage;
  storage.message = "slow \x1b[2J";
  safe->storage(storage);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("#   node 1 node-b"), std::string::npos) << out.str();
}

// --quiet keeps the findings and the one-line outcomes, never a table.
TEST(Printers, QuietPrinterKeepsOneLinePerOutcome) {
  RunResult r = fixture();
  std::ostringstream out;
  QuietPrinter quiet(out);
  quiet.header(r.tool, r.run);
  quiet.cut(Cut{Phase::sweep, "allreduce 1 MiB", "skipped"});
  quiet.context(RunConfig{}, r.run);
  quiet.point(std::span(r.records).subspan(0, 2));
  Finding slow;
  slow.message = "node-b is slow";
  PairsResult matrix;
  quiet.pairs(matrix, {slow});
  IslandsResult flat;
  flat.islands.resize(1);
  flat.message = "one island";
  quiet.islands(flat);
  BisectionResult bisection;
  bisection.message = "non-blocking";
  quiet.bisection(bisection);
  StorageResult storage;
  storage.message = "2 nodes wrote";
  quiet.storage(storage);
  quiet.budget(BudgetRecord{}, 1.0);
  EXPECT_EQ(out.str(), "# node-b is slow\n# bisection: non-blocking\n# storage: 2 nodes wrote\n");
}

// Within the sweep's first seconds there is no progress line, so nothing to erase.
TEST(Printers, ProgressPrinterStaysSilentEarlyInTheSweep) {
  const RunResult r = fixture();
  std::ostringstream status;
  ProgressPrinter progress(status);
  progress.context(RunConfig{}, r.run);
  progress.progress(r.records.front(), 0, 4);
  progress.point(std::span(r.records).subspan(0, 2));
  EXPECT_EQ(status.str(), "");
}

TEST(Printers, DataCheckPrinterNamesTheWrongElements) {
  RunResult r = fixture();
  std::ostringstream errors;
  Report good;
  good.runs.push_back({"r.json", r, {}, Level::ok, {}});
  DataCheckPrinter(errors).finalize(good);
  EXPECT_EQ(errors.str(), "");
  r.wrong_total = 3;
  Report bad;
  bad.runs.push_back({"r.json", r, {}, Level::ok, {}});
  DataCheckPrinter(errors).finalize(bad);
  EXPECT_EQ(errors.str(), "fabricbench: 3 wrong elements: the data check failed\n");
}

Report judged(RunResult r, ReportConfig config = {}) {
  std::vector<ReportRun> runs{{"r.json", std::move(r), {}, Level::ok, {}}};
  return build_report(std::move(runs), config, Expectations{});
}

TEST(Printers, RunSummaryNamesVerdictsCostFilesAndNextCommand) {
  RunResult r = fixture();
  r.duration_s = 36.0;
  ReportConfig priced;
  priced.price_per_gpu_hour = 2.0;
  std::ostringstream out;
  RunSummaryPrinter(out, {"out/r.json", "out/r.csv"}).finalize(judged(r, priced));
  const std::string text = out.str();
  EXPECT_NE(text.find("# Verdict: "), std::string::npos) << text;
  // A CPU-only run: ranks, not GPUs. 36 s x 4 ranks x 2 per hour = 0.08,
  // in the default currency; the decision's cost line says it first.
  EXPECT_NE(text.find("# Cost at USD 2 per rank-hour: this run USD 0.08 (36.0 s on 4 ranks, 2 nodes)"),
            std::string::npos)
      << text;
  EXPECT_LT(text.find("#   cost:         this run USD 0.08\n"), text.find("# Verdicts, worst first:")) << text;
  const std::string cost = text.substr(text.find("# Cost"), text.find('\n', text.find("# Cost")) - text.find("# Cost"));
  EXPECT_EQ(cost.find("GPU"), std::string::npos) << cost;
  EXPECT_NE(text.find("# Files: out/r.json out/r.csv\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# Next: fabricbench report out/r.json --html out/r.html\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("1 rank:"), std::string::npos) << text;
}

// The summary names the sections' CSV files the run wrote beside its records.
TEST(Printers, RunSummaryNamesTheSectionsCsvFiles) {
  std::ostringstream out;
  RunSummaryPrinter(out, {"", "out/r.csv"}).finalize(judged(every_section(), {}));
  EXPECT_NE(out.str().find("# Files: out/r.csv out/r.ladder.csv out/r.gpu_ladder.csv out/r.pairs.csv "
                           "out/r.findings.csv out/r.placement.csv out/r.projection.csv out/r.storage.csv\n"),
            std::string::npos)
      << out.str();
}

TEST(Printers, RunSummaryOnOneRankSaysNothingCrossedALink) {
  RunResult r = fixture();
  r.run.ranks = 1;
  r.run.nodes = 1;
  std::ostringstream out;
  RunSummaryPrinter(out, {}).finalize(judged(r));
  EXPECT_NE(out.str().find("1 rank: nothing crosses a link; launch with mpirun -np <ranks>"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("# Files: none written"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace fabricbench

namespace fabricbench {
namespace {

TEST(Printers, PhaseLinesSayWhichWhatAndHowLong) {
  std::ostringstream err;
  PhasePrinter printer(err);
  PhaseNotice n;
  n.index = 2;
  n.total = 5;
  n.name = "sweep";
  n.what = "allreduce at 3 sizes from 1 KiB to 1 MiB";
  n.share_s = 150;
  n.budget_s = 600;
  n.elapsed_s = 3.4;
  printer.phase(n);
  n.share_s = unlimited_seconds;
  n.name = "storage";
  printer.phase(n);
  n.budget_s.reset();
  printer.phase(n);
  printer.budget(BudgetRecord{600, std::nullopt, {}, {Cut{}}}, 3725.0);
  EXPECT_EQ(err.str(),
            "fabricbench: [2/5] sweep: allreduce at 3 sizes from 1 KiB to 1 MiB; at most 2 min 30 s (its share of "
            "the 10 min --budget); 3 s so far\n"
            "fabricbench: [2/5] storage: allreduce at 3 sizes from 1 KiB to 1 MiB; outside the 10 min --budget's "
            "shares; 3 s so far\n"
            "fabricbench: [2/5] storage: allreduce at 3 sizes from 1 KiB to 1 MiB; no --budget: as long as it takes; "
            "3 s so far\n"
            "fabricbench: done in 1 h 02 min (--budget 10 min; 1 cut)\n");
  EXPECT_EQ(duration_text(45.4), "45 s");
  EXPECT_EQ(duration_text(120), "2 min");
}

}  // namespace
}  // namespace fabricbench

namespace fabricbench {
namespace {

// Plain units: a latency matrix whose slowest link takes 1000 us or more
// reads in ms, with the unit in its heading; a fast one stays in us.
TEST(Printers, SlowLatenciesReadInMilliseconds) {
  PairsResult p;
  p.bytes = 1 << 20;
  p.small_bytes = 8;
  p.ranks_per_node = 1;
  p.hosts = {"node0", "node1"};
  p.nodes = PairMatrix(2);
  p.nodes.bw(0, 1) = p.nodes.bw(1, 0) = 1.5;
  p.nodes.lat(0, 1) = 12730.0;
  p.nodes.lat(1, 0) = 40.0;
  std::ostringstream slow;
  print_pairs(p, {}, slow);
  EXPECT_NE(slow.str().find("# Node pairs: latency at 8 B (ms, the fastest exchange)"), std::string::npos)
      << slow.str();
  EXPECT_NE(slow.str().find("12.730"), std::string::npos) << slow.str();
  EXPECT_NE(slow.str().find("0.040"), std::string::npos) << slow.str();
  EXPECT_EQ(slow.str().find("e+"), std::string::npos) << slow.str();
  p.nodes.lat(0, 1) = 45.0;
  std::ostringstream fast;
  print_pairs(p, {}, fast);
  EXPECT_NE(fast.str().find("# Node pairs: latency at 8 B (us, the fastest exchange)"), std::string::npos)
      << fast.str();
  EXPECT_NE(fast.str().find("45.000"), std::string::npos) << fast.str();
}

// A link the budget measured with a smaller message says so under the
// matrix whose heading gives the full one, and in the CSV's bytes column.
TEST(Printers, ALinkMeasuredWithASmallerMessageIsNamedWithItsSize) {
  PairsResult p;
  p.bytes = 64 << 20;
  p.small_bytes = 8;
  p.ranks_per_node = 1;
  p.hosts = {"node0", "node1", "node2"};
  p.nodes = PairMatrix(3);
  p.nodes.bw(0, 1) = p.nodes.bw(1, 0) = 1.5;
  p.nodes.bw(0, 2) = p.nodes.bw(2, 0) = 0.02;
  p.nodes.smaller(0, 2) = p.nodes.smaller(2, 0) = 4 << 20;
  std::ostringstream out;
  print_pairs(p, {}, out);
  EXPECT_NE(out.str().find("# measured with a smaller message to fit the budget: node0-node2 at 4 MiB\n"),
            std::string::npos)
      << out.str();
  RunResult r;
  r.pairs = p;
  for (const CsvTable& t : section_csv_tables(r)) {
    if (t.section != "pairs") continue;
    const auto column = [&t](const std::string& name) {
      return static_cast<std::size_t>(std::find(t.columns.begin(), t.columns.end(), name) - t.columns.begin());
    };
    ASSERT_EQ(t.rows.size(), 4U);
    for (const std::vector<CsvCell>& row : t.rows) {
      const bool slow = row[column("from")].text == "2" || row[column("to")].text == "2";
      EXPECT_EQ(row[column("bytes")].text, slow ? "4194304" : "67108864");
    }
  }
  p.nodes.smaller(0, 2) = p.nodes.smaller(2, 0) = std::nullopt;
  std::ostringstream whole;
  print_pairs(p, {}, whole);
  EXPECT_EQ(whole.str().find("smaller message"), std::string::npos) << whole.str();
}

}  // namespace
}  // namespace fabricbench
