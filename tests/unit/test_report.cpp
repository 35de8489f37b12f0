#include "fabricbench/analysis/report.hpp"
#include "fabricbench/output/file_writers.hpp"
#include "fabricbench/output/sections.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fabricbench/core/error.hpp"
#include "fabricbench/core/stats.hpp"
#include "fabricbench/results/reader.hpp"
#include "fabricbench/results/schema_validate.hpp"

namespace fabricbench {
namespace {

std::string golden_path(const std::string& name) { return std::string(FABRICBENCH_GOLDEN_DIR) + "/" + name; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Compares with the golden file; FABRICBENCH_UPDATE_GOLDEN=1 rewrites it.
void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = golden_path(name);
  if (const char* update = std::getenv("FABRICBENCH_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return;
  }
  EXPECT_EQ(actual, slurp(path)) << "golden " << name << " differs (FABRICBENCH_UPDATE_GOLDEN=1 rewrites it)";
}

SchemaValidator schema() { return SchemaValidator(nlohmann::json::parse(result_schema_text())); }

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(SchemaValidator, EmbeddedSchemaIsTheRepositoryFile) {
  EXPECT_EQ(nlohmann::json::parse(result_schema_text()),
            nlohmann::json::parse(slurp(std::string(FABRICBENCH_GOLDEN_DIR) + "/../../src/schema/result.schema.json")));
}

// The same answers as python's jsonschema (the schema_* ctest entries).
TEST(SchemaValidator, AgreesWithJsonschemaOnTheGoldenFiles) {
  const SchemaValidator v = schema();
  for (const char* name :
       {"result.json", "run_a.json", "run_a2.json", "run_b.json", "run_healthy.json", "run_slow.json"})
    EXPECT_TRUE(v.validate(nlohmann::json::parse(slurp(golden_path(name)))).empty()) << name;
  const auto errors = v.validate(nlohmann::json::parse(slurp(golden_path("broken_result.json"))));
  ASSERT_EQ(errors.size(), 3U);
  std::string all;
  for (const SchemaError& e : errors) all += e.path + ": " + e.message + "\n";
  EXPECT_NE(all.find("fabricbench.result/1"), std::string::npos) << all;
  EXPECT_NE(all.find("records/1/time_us: -1 is less than the minimum 0"), std::string::npos) << all;
  EXPECT_NE(all.find("records/0: "), std::string::npos) << all;
}

TEST(SchemaValidator, Keywords) {
  const SchemaValidator v(nlohmann::json::parse(R"({
    "definitions": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
    "type": "object", "required": ["a"], "additionalProperties": false,
    "properties": {
      "a": {"$ref": "#/definitions/n"},
      "b": {"type": ["string", "null"], "pattern": "^x", "minLength": 2},
      "c": {"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": true, "minItems": 1, "maxItems": 2},
      "d": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5}]},
      "e": {"anyOf": [{"const": "y"}, {"type": "boolean"}]},
      "f": {"not": {"type": "string"}}
    }})"));
  const auto one = [&v](const char* doc) {
    const auto errors = v.validate(nlohmann::json::parse(doc));
    return errors.empty() ? std::string() : errors.front().path + ": " + errors.front().message;
  };
  EXPECT_EQ(one(R"({"a": 3, "b": "xy", "c": [1, 2], "d": 2, "e": true, "f": 1})"), "");
  EXPECT_EQ(one(R"({"a": 3.0})"), "");  // 3.0 is an integer to JSON Schema
  EXPECT_EQ(one(R"({})"), ": 'a' is a required property");
  EXPECT_EQ(one(R"({"a": 10})"), "a: 10 is more than the maximum 9");
  EXPECT_EQ(one(R"({"a": 1, "z": 1})"), ": additional property 'z' is not allowed");
  EXPECT_EQ(one(R"({"a": 1, "b": "yy"})"), "b: \"yy\" does not match '^x'");
  EXPECT_EQ(one(R"({"a": 1, "b": "x"})"), "b: \"x\" is shorter than 2 characters");
  EXPECT_EQ(one(R"({"a": 1, "c": [1, 1]})"), "c: items 0 and 1 are equal (1)");
  EXPECT_EQ(one(R"({"a": 1, "c": [4]})"), "c/0: 4 is not one of [1,2,3]");
  EXPECT_EQ(one(R"({"a": 1, "c": [1, 2, 3]})"), "c: has 3 items, more than the maximum 2");
  EXPECT_EQ(one(R"({"a": 1, "d": 7})"), "d: 7 is valid under more than one of the given schemas");
  EXPECT_EQ(one(R"({"a": 1, "e": "n"})"), "e: \"n\" is not valid under any of the given schemas");
  EXPECT_EQ(one(R"({"a": 1, "f": "s"})"), "f: \"s\" should not be valid under {\"type\":\"string\"}");
  EXPECT_EQ(one(R"({"a": "1"})"), "a: \"1\" is not of type integer");
  EXPECT_THROW(SchemaValidator(nlohmann::json::parse(R"({"format": "date"})")), std::invalid_argument);
  EXPECT_THROW(SchemaValidator(nlohmann::json::parse(R"({"$ref": "#/definitions/none"})")), std::invalid_argument);
}

TEST(Reader, ReadsBackWhatTheWriterWrote) {
  const RunResult r = read_result_file(golden_path("run_b.json"));
  EXPECT_EQ(r.run.hostnames, (std::vector<std::string>{"b-node-1", "b-node-2"}));
  EXPECT_EQ(r.records.size(), 6U);
  ASSERT_TRUE(r.scaling && r.pairs && r.topology);
  EXPECT_EQ(r.scaling->projection.size(), 2U);
  EXPECT_EQ(r.findings.size(), 1U);
  ASSERT_TRUE(r.pairs->nodes.bw(1, 0).has_value());
  EXPECT_DOUBLE_EQ(*r.pairs->nodes.bw(1, 0), 120.0);
  EXPECT_EQ(r.topology->nodes.size(), 2U);
  EXPECT_EQ(r.topology->anomalies.size(), 1U);
  ASSERT_TRUE(r.run.cost && r.run.cost->per_gpu_hour);
  EXPECT_DOUBLE_EQ(*r.run.cost->per_gpu_hour, 2.5);
  EXPECT_DOUBLE_EQ(r.duration_s.value_or(0), 95.5);
}

TEST(Reader, WrongForeignAndTruncatedFilesSayWhy) {
  EXPECT_EQ(message_of([] { (void)read_result_file(golden_path("broken_result.json")); }),
            golden_path("broken_result.json") +
                ": not a fabricbench result (schema 'fabricbench.result/2', expected fabricbench.result/1)");
  EXPECT_EQ(message_of([] { (void)result_from_json(nlohmann::json::parse("[1]"), "x.json"); }),
            "x.json: not a fabricbench result (a JSON array, not an object)");
  EXPECT_EQ(message_of([] { (void)result_from_json(nlohmann::json::parse(R"({"a": 1})"), "x.json"); }),
            "x.json: not a fabricbench result (no \"schema\" member; expected fabricbench.result/1)");
  nlohmann::json doc = nlohmann::json::parse(slurp(golden_path("result.json")));
  doc["records"][3]["bytes"] = -1;
  EXPECT_EQ(message_of([&doc] { (void)result_from_json(doc, "r.json"); }),
            "r.json: records/3/bytes: -1 is less than the minimum 0");
  const std::string text = slurp(golden_path("result.json"));
  const std::string cut = ::testing::TempDir() + "/cut.json";
  std::ofstream(cut) << text.substr(0, text.size() / 2);
  EXPECT_NE(message_of([&cut] { (void)read_result_file(cut); }).find(cut + ": truncated or not JSON: "),
            std::string::npos);
  EXPECT_NE(message_of([] { (void)read_result_file("/nonexistent/r.json"); }).find("/nonexistent/r.json: cannot read"),
            std::string::npos);
}

TEST(Gates, ParseErrorsNameTheExpression) {
  EXPECT_EQ(message_of([] { (void)parse_gate("allreduce.busbw"); }),
            "--expect 'allreduce.busbw': no comparison (use >=, <=, >, < or ==), e.g. allreduce.busbw>=350");
  EXPECT_EQ(message_of([] { (void)parse_gate("allreduce.busbw>=fast"); }),
            "--expect 'allreduce.busbw>=fast': 'fast' is not a number");
  EXPECT_EQ(
      message_of([] { (void)parse_gate("allreduce.speed>=1"); }),
      "--expect 'allreduce.speed>=1': unknown metric 'speed' for allreduce (busbw, algbw, time_us, p50_us, p99_us)");
  EXPECT_EQ(message_of([] { (void)parse_gate("allgather.busbw@64Q>=1"); }),
            "--expect 'allgather.busbw@64Q>=1': '@64Q' is not a size (bytes, or K/M/G, e.g. @64M)");
  EXPECT_NE(message_of([] { (void)parse_gate("gpu.busbw>=1"); }).find("unknown subject 'gpu'"), std::string::npos);
  EXPECT_NE(message_of([] { (void)parse_gate("topo.h2d_gbs@2>=1"); }).find("takes no @"), std::string::npos);
  const Gate g = parse_gate("allgather.busbw@64M>=100");
  EXPECT_EQ(g.subject, "allgather");
  EXPECT_EQ(name(g.metric), "busbw");
  EXPECT_EQ(g.at, std::size_t{64} << 20);
  EXPECT_EQ(name(g.comparison), ">=");
  EXPECT_DOUBLE_EQ(g.value, 100);
}

TEST(Gates, EvaluateEveryKind) {
  const RunResult a = read_result_file(golden_path("run_a.json"));
  const auto level = [&a](const char* text) { return evaluate_gate(parse_gate(text), a).level; };
  EXPECT_EQ(level("allreduce.busbw>=170"), Level::ok);  // the largest size: 180
  EXPECT_EQ(level("allreduce.busbw>=190"), Level::fail);
  EXPECT_EQ(level("allreduce.busbw@1M>=40"), Level::ok);
  EXPECT_EQ(level("allreduce.busbw@2M>=1"), Level::fail);  // not measured
  EXPECT_EQ(level("sendrecv.time_us<=20"), Level::fail);   // not measured
  EXPECT_EQ(level("scale.efficiency@2>=0.45"), Level::ok);
  EXPECT_EQ(level("scale.efficiency>=0.9"), Level::fail);
  EXPECT_EQ(level("pairs.bandwidth>=300"), Level::ok);
  EXPECT_EQ(level("pairs.findings==0"), Level::ok);
  EXPECT_EQ(level("topo.h2d_gbs>=40"), Level::ok);
  EXPECT_EQ(level("topo.gpus>=8"), Level::ok);
  const Verdict v = evaluate_gate(parse_gate("allreduce.busbw>=190"), a);
  EXPECT_EQ(v.reason, "180 GB/s (allreduce 256 MiB float out-of-place) fails >=190");
  const RunResult plain = read_result_file(golden_path("result.json"));
  EXPECT_EQ(evaluate_gate(parse_gate("topo.h2d_gbs>=40"), plain).reason, "no topology in this run");
  EXPECT_EQ(evaluate_gate(parse_gate("scale.efficiency>=0.9"), plain).reason, "no scaling ladder in this run");
}

TEST(Gates, EveryMetricOfTheTableParsesToItself) {
  for (const GateMetricInfo& m : gate_metrics) {
    const std::string subject = m.family == GateFamily::op      ? "allreduce"
                                : m.family == GateFamily::scale ? "scale"
                                : m.family == GateFamily::pairs ? "pairs"
                                                                : "topo";
    for (const auto& [comparison, label] : comparison_names) {
      const Gate g = parse_gate(fmt::format("{}.{}{}1", subject, m.name, label));
      EXPECT_EQ(g.metric, m.metric);
      EXPECT_EQ(g.comparison, comparison);
    }
  }
}

TEST(Verdicts, ExpectationsWithAnUnknownMatchNameAreRefused) {
  const auto with = [](const std::string& match) {
    return R"({"schema": "fabricbench.expectations/1", "warn_at": 0.9, "fail_below": 0.7, "references": [)"
           R"({"id": "x", "label": "X", "figure": "allreduce.busbw", "expected_gbs": 1, "source": "s", "match": )" +
           match + "}]}";
  };
  EXPECT_EQ(parse_expectations(with(R"({"gpu_link": "nvswitch", "nic_kind": "roce"})")).references.at(0).gpu_link,
            GpuLink::nvswitch);
  EXPECT_THROW((void)parse_expectations(with(R"({"gpu_link": "nvbridge"})")), UsageError);
  std::string bad_figure = with("{}");
  bad_figure.replace(bad_figure.find("allreduce.busbw"), 15, "allreduce.bogus");
  EXPECT_THROW((void)parse_expectations(bad_figure), UsageError);
  try {
    (void)parse_expectations(with(R"({"nic_kind": "token-ring"})"));
    FAIL() << "an unknown nic_kind was read";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "expectations: x: nic_kind 'token-ring' is not infiniband, roce or ethernet");
  }
}

TEST(Verdicts, ReferencesMatchDetectedHardwareOrSayNoReference) {
  const RunResult a = read_result_file(golden_path("run_a.json"));
  const Hardware hw = detect_hardware(*a.topology);
  EXPECT_EQ(describe(hw), "8×NVIDIA H100 80GB HBM3, NVSwitch, 8×infiniband 400 Gb/s, PCIe Gen5 x16");
  const std::vector<Verdict> refs = reference_verdicts(a, builtin_expectations());
  ASSERT_EQ(refs.size(), 4U);
  EXPECT_EQ(refs[0].level, Level::info);  // a one-node figure on a two-node run
  EXPECT_EQ(refs[1].reason,
            "node-pair bandwidth per NIC 47 GB/s is 102% of the ≈46-48 GB/s expected for InfiniBand NDR 400 Gb/s per "
            "NIC (reference infiniband-ndr-400)");
  for (const Verdict& v : refs) EXPECT_FALSE(v.source.empty());

  // One node with its 8 GPUs: the all-reduce figure applies.
  RunResult one = a;
  one.run.nodes = 1;
  one.run.ranks = 8;
  for (SweepRecord& r : one.records)
    if (r.timing) r.timing->busbw_gbs = 212;
  const std::vector<Verdict> node = reference_verdicts(one, builtin_expectations());
  EXPECT_EQ(node[0].level, Level::fail);
  EXPECT_EQ(node[0].reason.rfind("all-reduce busbw 212 GB/s is 58% of the ≈365-370 GB/s expected for 8×H100 NVSwitch, "
                                 "ring (reference h100-sxm-8gpu-allreduce-ring, from 256 MiB)",
                                 0),
            0U)
      << node[0].reason;

  const RunResult plain = read_result_file(golden_path("result.json"));
  const std::vector<Verdict> none = reference_verdicts(plain, builtin_expectations());
  ASSERT_EQ(none.size(), 1U);
  EXPECT_EQ(none[0].reason, "no reference (no GPU/NIC topology in this run)");
  RunResult unknown = a;
  for (NodeTopology& n : unknown.topology->nodes) {
    n.gpus.clear();
    n.nics.clear();
  }
  EXPECT_EQ(reference_verdicts(unknown, builtin_expectations())[0].reason,
            "no reference for no GPU, no active RDMA NIC");
}

TEST(Report, AskedForAReferenceWhereThereIsNoneWarns) {
  const RunResult a = read_result_file(golden_path("run_a.json"));
  RunResult unknown = a;
  for (NodeTopology& n : unknown.topology->nodes) {
    n.gpus.clear();
    n.nics.clear();
  }
  std::vector<Verdict> refs = reference_verdicts(unknown, builtin_expectations());
  require_reference(refs);
  ASSERT_EQ(refs.size(), 1U);
  EXPECT_EQ(refs[0].level, Level::warn);
  EXPECT_EQ(refs[0].reason, "no reference for no GPU, no active RDMA NIC; give --expect");
  // Judged references keep their own level.
  std::vector<Verdict> judged = reference_verdicts(a, builtin_expectations());
  const std::vector<Verdict> before = judged;
  require_reference(judged);
  for (std::size_t i = 0; i < judged.size(); ++i) EXPECT_EQ(judged[i].level, before[i].level);
  // Through the report: --fail-on-warn alone passes; with --expect-reference
  // it exits 1.
  const auto exit_code = [&unknown](bool expect_reference) {
    ReportConfig c;
    c.expect_reference = expect_reference;
    c.fail_on_warn = true;
    std::vector<ReportRun> runs;
    runs.push_back({"unknown", unknown, {}, Level::ok, {}});
    return build_report(std::move(runs), c, builtin_expectations()).exit_code;
  };
  EXPECT_EQ(exit_code(false), 0);
  EXPECT_EQ(exit_code(true), 1);
}

// The expectations loader reads integers range-checked: a figure beyond int
// (once a float-cast overflow, then whatever the conversion gave) is refused
// with the field named.
TEST(Expectations, IntegersOutOfRangeAreRefusedNotConverted) {
  const auto with_match = [](const std::string& match) {
    return R"({"schema": "fabricbench.expectations/1", "warn_at": 0.9, "fail_below": 0.7, "references": [)"
           R"({"id": "x", "label": "x", "figure": "allreduce.busbw", "match": )" +
           match + R"(, "expected_gbs": 10, "source": "s"}]})";
  };
  const Expectations ok = parse_expectations(with_match(R"({"pcie_gen": 5, "gpus_per_node": 8.0})"));
  ASSERT_EQ(ok.references.size(), 1U);
  EXPECT_EQ(ok.references[0].pcie_gen, 5);
  EXPECT_EQ(ok.references[0].gpus_per_node, 8);
  EXPECT_EQ(message_of([&] { (void)parse_expectations(with_match(R"({"pcie_gen": 1e20})")); }),
            "pcie_gen: 1e+20 is not an integer from -2147483648 to 2147483647");
  EXPECT_EQ(message_of([&] { (void)parse_expectations(with_match(R"({"gpus_per_node": 9223372036854775808})")); }),
            "gpus_per_node: 9223372036854775808 is not an integer from -2147483648 to 2147483647");
  EXPECT_EQ(message_of([&] { (void)parse_expectations(with_match(R"({"pcie_width": 4.5})")); }),
            "pcie_width: 4.5 is not an integer from -2147483648 to 2147483647");
}

Report fixture_report(const ReportConfig& config, const std::vector<std::string>& names) {
  std::vector<ReportRun> runs;
  for (const std::string& n : names) runs.push_back({n, read_result_file(golden_path(n)), {}, Level::ok, {}});
  return build_report(std::move(runs), config, builtin_expectations());
}

// The report view holds every figure a printer shows: the heat-map's median
// is the interpolated one (core/stats), a level has one label, each chart has
// both placements and the run-to-run spread.
TEST(Report, ViewComputesChartsWithTheOneMedianAndLabel) {
  const Report r = fixture_report({}, {"run_a.json", "run_a2.json", "run_b.json"});
  ASSERT_FALSE(r.matrix_charts.empty());
  bool bandwidth = false, latency = false;
  for (const MatrixChart& m : r.matrix_charts) {
    std::vector<double> v;
    for (const MatrixCell& c : m.cells) {
      EXPECT_NE(c.from, c.to) << m.id;
      v.push_back(c.value);
    }
    ASSERT_FALSE(v.empty()) << m.id;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double middle = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
    EXPECT_DOUBLE_EQ(m.median, middle) << m.id;
    EXPECT_EQ(m.labels.size(), static_cast<std::size_t>(m.size)) << m.id;
    bandwidth = bandwidth || m.unit == "GB/s";
    latency = latency || (m.unit == "us" && !m.higher_is_better);
  }
  EXPECT_TRUE(bandwidth);
  EXPECT_TRUE(latency);
  ASSERT_EQ(r.ladder_charts.size(), 3U);
  const std::vector<std::string>& levels = r.ladder_charts.front().levels;
  ASSERT_FALSE(levels.empty());
  EXPECT_EQ(levels.front(), "1 node");
  for (const std::string& l : levels)
    EXPECT_TRUE(l == "rail (1 rank/node)" || l.find(" node") != std::string::npos) << l;
  EXPECT_EQ(std::find(levels.begin(), levels.end(), "1 nodes"), levels.end());
  ASSERT_FALSE(r.busbw_charts.empty());
  const BusbwChart& chart = r.busbw_charts.front();
  ASSERT_FALSE(chart.series.empty());
  EXPECT_EQ(chart.series.front().label.rfind("A: ", 0), 0U);
  // Group A has two runs: each point a spread over both.
  EXPECT_EQ(chart.series.front().points.front().busbw.runs, 2);
  for (std::size_t i = 1; i < chart.series.size(); ++i) EXPECT_LE(chart.series[i - 1].group, chart.series[i].group);
}

// Runs of one label (the fixtures' cluster-a) are one group: a mean and a
// spread over them.
TEST(Report, ComparisonAggregatesRunsOfOneLabel) {
  const Report r = fixture_report({}, {"run_a.json", "run_a2.json", "run_b.json"});
  ASSERT_EQ(r.groups.size(), 2U);
  EXPECT_EQ(r.groups[0].runs, (std::vector<std::size_t>{0, 1}));
  ASSERT_FALSE(r.compare.empty());
  const CompareRow& row = r.compare.front();
  ASSERT_TRUE(row.busbw[0] && row.busbw[1]);
  EXPECT_EQ(row.busbw[0]->runs, 2);
  EXPECT_GT(row.busbw[0]->sd, 0);
  EXPECT_NEAR(row.busbw[1]->mean / row.busbw[0]->mean, 0.8 / 0.98, 1e-9);
  ASSERT_TRUE(row.ratio[1].value);
  EXPECT_NEAR(*row.ratio[1].value, 0.8 / 0.98, 1e-9);
  EXPECT_EQ(r.level, Level::warn);  // the slow link and the anomaly in B
  EXPECT_EQ(r.exit_code, 0);
  std::ostringstream text, csv, html;
  print_report(r, text);
  write_report_csv(r, csv);
  write_report_html(r, html);
  expect_golden("report_compare.txt", text.str());
  expect_golden("report_compare.csv", csv.str());
}

// Runs are grouped by their --label: two labels on one cluster are two
// groups; an unlabelled file is a group of its own.
TEST(Report, GroupsByLabelElseByFile) {
  std::vector<ReportRun> runs;
  for (const char* n : {"run_a.json", "run_a2.json", "run_b.json"})
    runs.push_back({n, read_result_file(golden_path(n)), {}, Level::ok, {}});
  runs[1].result.run.label = "retest";  // the same cluster, another label
  Report r = build_report(runs, {}, builtin_expectations());
  ASSERT_EQ(r.groups.size(), 3U);
  EXPECT_EQ(r.groups[0].name, "cluster-a");
  EXPECT_EQ(r.groups[1].name, "retest");
  EXPECT_EQ(r.groups[0].runs, (std::vector<std::size_t>{0}));
  runs[0].result.run.label.clear();
  runs[1].result.run.label.clear();
  r = build_report(runs, {}, builtin_expectations());
  ASSERT_EQ(r.groups.size(), 3U);  // unlabelled: each file alone, named by its file
  EXPECT_EQ(r.groups[0].name, "run_a.json");
  EXPECT_EQ(r.groups[1].name, "run_a2.json");
  EXPECT_EQ(group_key("x/run.json", runs[0].result), "file:x/run.json");
  EXPECT_EQ(group_key("x/run.json", runs[2].result), "label:cluster-b");
}

// Rows are keyed by redop (sum and max never merge); the near-zero 8-byte
// point gets no ratio; the headline sums up the large sizes and the link.
TEST(Report, RowsByRedopNoiseAndHeadline) {
  const Report r = fixture_report({}, {"run_healthy.json", "run_slow.json"});
  ASSERT_EQ(r.groups.size(), 2U);
  EXPECT_EQ(r.groups[0].name, "healthy");
  EXPECT_EQ(r.groups[1].name, "slow-node");
  int sum = 0, max = 0;
  bool tiny = false;
  for (const CompareRow& row : r.compare) {
    if (row.op != Op::allreduce) continue;
    ASSERT_TRUE(row.redop);
    sum += *row.redop == RedOp::sum ? 1 : 0;
    max += *row.redop == RedOp::max ? 1 : 0;
    if (row.bytes == 8) {
      tiny = true;
      EXPECT_EQ(row.ratio[1].noise, Noise::below_floor);
      EXPECT_FALSE(row.ratio[1].value);
    } else {
      ASSERT_TRUE(row.ratio[1].value);
      EXPECT_NEAR(*row.ratio[1].value, 0.59, 1e-9);
    }
  }
  EXPECT_EQ(sum, 4);
  EXPECT_EQ(max, 3);
  EXPECT_TRUE(tiny);
  ASSERT_EQ(r.headline.size(), 1U);
  const GroupHeadline& h = r.headline[0];
  ASSERT_EQ(h.ops.size(), 2U);
  EXPECT_NEAR(h.ops[0].ratio, 0.59, 1e-9);
  EXPECT_EQ(h.ops[0].points, 6);  // sum and max, three sizes each; 8 B is below 1 MiB
  ASSERT_TRUE(h.link);
  EXPECT_EQ(h.link->from, "mu-x");
  EXPECT_EQ(h.link->to, "mu-y");
  EXPECT_NEAR(h.link->base_gbs / h.link->other_gbs, 15, 1e-9);
  EXPECT_EQ(h.only_here, (std::vector<std::string>{"slow link mu-x -> mu-y"}));
  EXPECT_EQ(h.text,
            "B (slow-node) vs A (healthy): allreduce 41% lower busbw, allgather 41% lower busbw at >= 1 MiB "
            "(geometric mean); link mu-x -> mu-y 15.0x slower (25.1 vs 376.0 GB/s); slow link mu-x -> mu-y only "
            "in B");
  std::ostringstream text, csv;
  print_report(r, text);
  write_report_csv(r, csv);
  expect_golden("report_labels.txt", text.str());
  expect_golden("report_labels.csv", csv.str());
}

// The noise rule: below the floor, inside the spread, missing, or a ratio.
TEST(Report, CompareRatioNoiseRule) {
  const Spread one{100, 0, 100, 100, 1};
  const Spread low{0.5, 0, 0.5, 0.5, 1};
  EXPECT_EQ(compare_ratio(one, low, 1.0).noise, Noise::below_floor);
  EXPECT_EQ(compare_ratio(low, one, 1.0).noise, Noise::below_floor);
  EXPECT_EQ(compare_ratio(std::nullopt, one, 1.0).noise, Noise::missing);
  const CompareRatio r = compare_ratio(one, Spread{80, 0, 80, 80, 1}, 1.0);
  ASSERT_TRUE(r.value);
  EXPECT_DOUBLE_EQ(*r.value, 0.8);
  // Two runs each, sd 10: the standard error of the difference is 10, so
  // a difference of 20 is within it and 21 is not.
  const Spread spread_a{100, 10, 90, 110, 2};
  EXPECT_EQ(compare_ratio(spread_a, Spread{80, 10, 70, 90, 2}, 1.0).noise, Noise::within_spread);
  EXPECT_EQ(compare_ratio(spread_a, Spread{79, 10, 69, 89, 2}, 1.0).noise, Noise::none);
}

// The comparison comes first: its result line before any file's own section.
TEST(Report, ComparisonPrintsBeforeEachFile) {
  const Report r = fixture_report({}, {"run_a.json", "run_a2.json", "run_b.json"});
  std::ostringstream text;
  print_report(r, text);
  const std::string t = text.str();
  const std::size_t result = t.find("# Result: B (cluster-b) vs A (cluster-a): ");
  ASSERT_NE(result, std::string::npos) << t;
  EXPECT_LT(t.find("# Comparison of 2 groups"), result);
  EXPECT_LT(result, t.find("# run_a.json: fabricbench"));
  EXPECT_EQ(t.rfind("# Overall verdict: WARN\n"), t.size() - std::string("# Overall verdict: WARN\n").size());
}

// The comparison CSV: one row per point and group with the group, the label,
// the files and the whole key.
TEST(Report, ComparisonCsvIsLongWithGroupAndKey) {
  std::ostringstream csv;
  write_report_csv(fixture_report({}, {"run_a.json", "run_a2.json", "run_b.json"}), csv);
  std::istringstream lines(csv.str());
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_EQ(header,
            "group,label,files,op,dtype,redop,root,placement,bytes,runs,busbw_gbs_mean,busbw_gbs_sd,busbw_gbs_min,"
            "busbw_gbs_max,busbw_ratio_to_first,noise");
  EXPECT_EQ(first.rfind("A,cluster-a,run_a.json run_a2.json,allreduce,float,sum,,out_of_place,1048576,2,", 0), 0U)
      << first;
  EXPECT_EQ(second.rfind("B,cluster-b,run_b.json,allreduce,float,sum,,out_of_place,1048576,1,36,", 0), 0U) << second;
}

TEST(Report, GatingAndExitCodes) {
  ReportConfig c;
  c.fail_on_warn = true;
  EXPECT_EQ(fixture_report(c, {"run_b.json"}).exit_code, 1);
  EXPECT_EQ(fixture_report(c, {"run_a.json"}).exit_code, 0);
  c.expect_reference = true;
  EXPECT_EQ(fixture_report(c, {"run_b.json"}).exit_code, 3);  // per-NIC bandwidth 57% of NDR
  ReportConfig g;
  g.expects = {"allreduce.busbw>=350"};
  EXPECT_EQ(fixture_report(g, {"run_a.json"}).exit_code, 3);
  g.expects = {"allreduce.busbw>=150"};
  EXPECT_EQ(fixture_report(g, {"run_a.json"}).exit_code, 0);
}

TEST(Report, CostOfTheRunAndOfTraining) {
  const RunResult a = read_result_file(golden_path("run_a.json"));
  const auto cost = cost_of(a, {});
  ASSERT_TRUE(cost && cost->run_cost);
  EXPECT_NEAR(*cost->run_cost, 95.5 / 3600 * 16 * 2.5, 1e-12);
  ASSERT_EQ(cost->training.size(), 2U);
  EXPECT_NEAR(cost->training[1].per_1000_steps, a.scaling->projection[1].step_ms * 1000 / 3.6e6 * 16 * 2.5, 1e-12);
  const auto by_node = cost_of(a, PriceInfo{std::nullopt, 20.0, ""});
  EXPECT_NEAR(*by_node->run_cost, 95.5 / 3600 * 2 * 20.0, 1e-12);
  RunResult unpriced = a;
  unpriced.run.cost.reset();
  EXPECT_FALSE(cost_of(unpriced, {}).has_value());
}

// The HTML's structure: element names with their ids and classes, text and
// numbers left out, so the golden file pins the page's shape.
std::string outline(const std::string& html) {
  const std::regex tag(R"(<([a-zA-Z][a-zA-Z0-9]*)([^>]*)>)");
  const std::regex id(R"re(\bid="([^"]*)")re");
  const std::regex cls(R"re(\bclass="([^"]*)")re");
  std::map<std::string, int> counts;
  std::string out;
  std::string last;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    const std::string attrs = (*it)[2];
    if (name == "line" || name == "circle" || name == "text" || name == "rect" || name == "td" || name == "tr" ||
        name == "title" || name == "th" || name == "span" || name == "div" || name == "b" || name == "li") {
      ++counts[name];
      continue;
    }
    std::smatch m;
    std::string line = name;
    if (std::regex_search(attrs, m, id)) line += "#" + m[1].str();
    if (std::regex_search(attrs, m, cls)) line += "." + m[1].str();
    out += line + "\n";
  }
  for (const auto& [name, n] : counts) out += name + " x" + std::to_string(n) + "\n";
  return out;
}

TEST(Report, HtmlIsSelfContainedWithItsCharts) {
  const Report r = fixture_report({}, {"run_a.json", "run_a2.json", "run_b.json"});
  std::ostringstream html;
  write_report_html(r, html);
  const std::string page = html.str();
  for (const char* forbidden : {"<script", "<link", "@import", "url(", "<img", "src=", "href="})
    EXPECT_EQ(page.find(forbidden), std::string::npos) << forbidden;
  for (const char* present : {"id=\"verdict\"", "busbw-chart", "ladder-chart", "class=\"chart heatmap\"",
                              "cell finding", "id=\"topology-0\"", "id=\"cost\"", "id=\"comparison\""})
    EXPECT_NE(page.find(present), std::string::npos) << present;
  expect_golden("report_outline.txt", outline(page));
}

TEST(Report, HtmlEscapesText) {
  RunResult r = read_result_file(golden_path("result.json"));
  r.run.hostnames = {"<b>&\"'", "x"};
  std::vector<ReportRun> runs{{"a<b>.json", r, {}, Level::ok, {}}};
  std::ostringstream html;
  write_report_html(build_report(std::move(runs), {}, builtin_expectations()), html);
  EXPECT_EQ(html.str().find("<b>&"), std::string::npos);
  EXPECT_NE(html.str().find("a&lt;b&gt;.json"), std::string::npos);
}

// A suspect the second pass cleared is listed apart from the findings (and
// escaped like them), and the text report prints it under the matrix.
TEST(Report, UnconfirmedSuspectsAreShownApartFromFindings) {
  RunResult r = read_result_file(golden_path("run_slow.json"));
  Finding cleared;
  cleared.nodes = {1};
  cleared.hosts = {"mu-y"};
  cleared.confirmed = false;
  cleared.message = "not confirmed: slow node mu-y <1>";
  r.unconfirmed = {cleared};
  std::vector<ReportRun> runs{{"slow.json", r, {}, Level::ok, {}}};
  const Report report = build_report(std::move(runs), {}, builtin_expectations());
  std::ostringstream html;
  std::ostringstream text;
  write_report_html(report, html);
  print_report(report, text);
  EXPECT_NE(html.str().find("<ul class=\"findings muted\">\n<li>not confirmed: slow node mu-y &lt;1&gt;</li>"),
            std::string::npos);
  EXPECT_NE(text.str().find("#   not confirmed: slow node mu-y <1>"), std::string::npos);
  EXPECT_NE(text.str().find("INFO finding   mu-y: not confirmed: slow node mu-y <1>"), std::string::npos) << text.str();
}

TEST(Report, HtmlDrawsAHugeFigureWithFiniteCoordinates) {
  RunResult r = read_result_file(golden_path("result.json"));
  for (SweepRecord& record : r.records)
    if (record.timing) record.timing->busbw_gbs = 1.79e308;  // near the largest double
  std::vector<ReportRun> runs{{"huge.json", r, {}, Level::ok, {}}};
  std::ostringstream html;
  write_report_html(build_report(std::move(runs), {}, builtin_expectations()), html);
  const std::string page = html.str();
  EXPECT_NE(page.find("busbw-chart"), std::string::npos);
  for (const char* bad : {"nan", "inf\"", "=\"-"})
    EXPECT_EQ(page.find(bad), std::string::npos)
        << bad << ": " << page.substr(page.find(bad) > 80 ? page.find(bad) - 80 : 0, 160);
}

TEST(Report, SingleRunTablesAndCsv) {
  const Report r = fixture_report({}, {"result.json"});
  std::ostringstream text, csv;
  print_report(r, text);
  write_report_csv(r, csv);
  expect_golden("report_single.txt", text.str());
  EXPECT_EQ(csv.str(), slurp(golden_path("result.csv")));  // the same CSV `run --csv` writes
}

}  // namespace
}  // namespace fabricbench
