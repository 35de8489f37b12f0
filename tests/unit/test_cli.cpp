#include "fabricbench/app/cli.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "fabricbench/app/guides.hpp"
#include "fabricbench/core/error.hpp"

namespace fabricbench {
namespace {

RunConfig parse(std::vector<std::string> args) { return parse_command_line(args).config; }

// The UsageError message for args, or "" when they parse.
std::string error_of(std::vector<std::string> args) {
  try {
    parse_command_line(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Cli, NoSubcommandMeansRunWithDefaults) {
  const RunConfig c = parse({});
  EXPECT_EQ(c.command, Command::run);
  EXPECT_EQ(c.ops, (std::vector<Op>{Op::allreduce, Op::allgather, Op::sendrecv}));
  EXPECT_EQ(c.dtypes, std::vector<DType>{DType::float32});
  EXPECT_EQ(c.sizes.front(), 8U);
  EXPECT_EQ(c.sizes.back(), 64U << 20);
  EXPECT_TRUE(c.check);
  EXPECT_EQ(c.inplace, InPlaceChoice::both);
  EXPECT_EQ(c.transport, TransportChoice::automatic);
  EXPECT_EQ(parse({"-b", "1K"}).command, Command::run);
}

TEST(Cli, OnFindingKeepsTheBudgetUnlessTheSmokeProfileOrTheFlagHalvesIt) {
  EXPECT_EQ(parse({"run"}).on_finding, OnFinding::keep);
  EXPECT_EQ(parse({"run", "--budget", "5m"}).on_finding, OnFinding::keep);
  EXPECT_EQ(parse({"run", "--budget", "5m", "--on-finding", "halve"}).on_finding, OnFinding::halve);
  const RunConfig smoke = parse({"run", "--profile", "smoke"});
  EXPECT_EQ(smoke.on_finding, OnFinding::halve);
  EXPECT_EQ(smoke.budget_s, 60.0);
  EXPECT_EQ(parse({"run", "--profile", "smoke", "--on-finding", "keep"}).on_finding, OnFinding::keep);
  EXPECT_THROW(parse({"run", "--budget", "none", "--on-finding", "halve"}), UsageError);  // no budget to halve
  // run ends within its default budget unless told otherwise; sweep has none.
  EXPECT_EQ(parse({"run"}).budget_s, 600.0);
  EXPECT_EQ(parse({"run", "--on-finding", "halve"}).on_finding, OnFinding::halve);
  EXPECT_FALSE(parse({"run", "--budget", "none"}).budget_s);
  EXPECT_FALSE(parse({"sweep"}).budget_s);
  EXPECT_THROW(parse({"run", "--budget", "never"}), UsageError);
  EXPECT_THROW(parse({"sweep", "--on-finding", "keep"}), UsageError);  // run's option: sweep has no health pass
}

TEST(Cli, SweepOptions) {
  const RunConfig c = parse(
      {"sweep",       "-b",          "8",         "-e",   "64M",    "-f",     "4",       "--ops", "allreduce,alltoall",
       "--dtype",     "double,int8", "--redop",   "max",  "--root", "1",      "--iters", "7",     "--warmup",
       "2",           "--no-check",  "--inplace", "only", "--json", "a.json", "--csv",   "a.csv", "-q",
       "--transport", "mpi"});
  EXPECT_EQ(c.command, Command::sweep);
  EXPECT_EQ(c.sizes.size(), 12U);
  EXPECT_EQ(c.sizes[1], 32U);
  EXPECT_EQ(c.ops, (std::vector<Op>{Op::allreduce, Op::alltoall}));
  EXPECT_EQ(c.dtypes, (std::vector<DType>{DType::float64, DType::int8}));
  EXPECT_EQ(c.redops, std::vector<RedOp>{RedOp::max});
  EXPECT_EQ(c.root, 1);
  EXPECT_EQ(c.iterations.fixed_iters, 7);
  EXPECT_EQ(c.iterations.warmup, 2);
  EXPECT_FALSE(c.check);
  EXPECT_EQ(c.inplace, InPlaceChoice::only);
  EXPECT_EQ(c.json_path, "a.json");
  EXPECT_EQ(c.csv_path, "a.csv");
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.transport, TransportChoice::mpi);
}

TEST(Cli, ExplicitSizesAreSortedAndDeduplicated) {
  EXPECT_EQ(parse({"sweep", "--sizes", "64M,8,1K,8"}).sizes, (std::vector<std::size_t>{8, 1024, 64U << 20}));
  EXPECT_EQ(parse({"--ops", "all"}).ops.size(), 7U);
}

TEST(Cli, VersionAndHelp) {
  EXPECT_EQ(parse({"version"}).command, Command::version);
  const ParseOutcome help = parse_command_line({"--help"});
  EXPECT_TRUE(help.exit_now);
  EXPECT_NE(help.text.find("sweep"), std::string::npos);
  const ParseOutcome sweep_help = parse_command_line({"sweep", "--help"});
  EXPECT_NE(sweep_help.text.find("--min-bytes"), std::string::npos);
}

// Every subcommand's help lists its options under headings by purpose, each
// naming the guide with the rest, and ends with examples; every guide a
// heading names exists.
TEST(Cli, HelpGroupsOptionsByPurposeAndEndsWithExamples) {
  for (const char* command : {"run", "sweep", "scale", "p2p", "topo", "storage", "report", "version", "help"}) {
    SCOPED_TRACE(command);
    const ParseOutcome help = parse_command_line({command, "--help"});
    ASSERT_TRUE(help.exit_now);
    const std::size_t examples = help.text.find("\nExamples:\n  ");
    ASSERT_NE(examples, std::string::npos) << help.text;
    EXPECT_NE(help.text.find(std::string("fabricbench ") + command, examples), std::string::npos) << help.text;
    std::size_t at = 0;
    while ((at = help.text.find("(fabricbench help ", at)) != std::string::npos) {
      at += 18;
      const std::string topic = help.text.substr(at, help.text.find_first_of(",)", at) - at);
      EXPECT_TRUE(std::any_of(guides().begin(), guides().end(), [&topic](const Guide& g) { return g.topic == topic; }))
          << topic;
    }
  }
  const std::string run = parse_command_line({"run", "--help"}).text;
  const std::size_t budget = run.find("A run that ends: budget, profile, health pass (fabricbench help budget):");
  ASSERT_NE(budget, std::string::npos) << run;
  EXPECT_GT(run.find("--budget", budget), budget);
  EXPECT_LT(run.find("--budget", budget), run.find("\n\n", budget));  // listed under its heading
  EXPECT_NE(run.find("Output: table, JSON, CSV, labels (fabricbench help reports):\n  --progress"), std::string::npos);
}

TEST(Cli, HelpListsAndPrintsTheGuides) {
  ASSERT_FALSE(guides().empty());
  const ParseOutcome list = parse_command_line({"help"});
  EXPECT_TRUE(list.exit_now);
  EXPECT_EQ(list.exit_code, 0);
  for (const Guide& g : guides()) {
    EXPECT_NE(list.text.find("  " + std::string(g.topic) + " "), std::string::npos) << g.topic;
    EXPECT_NE(list.text.find(guide_title(g)), std::string::npos) << g.topic;
    const ParseOutcome one = parse_command_line({"help", std::string(g.topic)});
    EXPECT_TRUE(one.exit_now);
    EXPECT_EQ(one.text, g.text);
  }
}

TEST(Cli, HelpRefusesAnUnknownTopic) {
  const std::string error = error_of({"help", "no-such-topic"});
  EXPECT_EQ(error.rfind("help: no topic 'no-such-topic' (topics: ", 0), 0U) << error;
  EXPECT_NE(error.find(std::string(guides().front().topic)), std::string::npos);
  EXPECT_EQ(error.find('\n'), std::string::npos);
  const std::string typo = error_of({"help", "budgte"});
  EXPECT_EQ(typo.rfind("help: no topic 'budgte'; did you mean budget? (topics: ", 0), 0U) << typo;
  EXPECT_EQ(error_of({"help", "budget", "extra"}), "'extra': help takes no such argument");
}

TEST(Cli, BadInputNamesTheFlagAndValue) {
  EXPECT_EQ(error_of({"--ops", "allreduce,bogus"}),
            "--ops: unknown op 'bogus' (choose from allreduce, allgather, reducescatter, broadcast, reduce, alltoall, "
            "sendrecv)");
  EXPECT_NE(error_of({"--dtype", "float128"}).find("--dtype: unknown dtype 'float128'"), std::string::npos);
  EXPECT_NE(error_of({"--redop", "mean"}).find("--redop: unknown redop 'mean'"), std::string::npos);
  EXPECT_EQ(error_of({"-b", "1M", "-e", "8K"}), "-b/--min-bytes 1M is above -e/--max-bytes 8K");
  EXPECT_EQ(error_of({"-f", "1"}), "-f/--step-factor 1 must be above 1");
  EXPECT_EQ(error_of({"-f", "0.5"}), "-f/--step-factor 0.5 must be above 1");
  EXPECT_EQ(error_of({"-b", "10"}), "-b/--min-bytes: 10 B is not a whole number of float elements (4 B each)");
  EXPECT_EQ(error_of({"--sizes", "8,6", "--dtype", "double"}),
            "--sizes: 6 B is not a whole number of double elements (8 B each)");
  EXPECT_NE(error_of({"--sizes", "8,7X"}).find("--sizes: '7X' is not a size"), std::string::npos);
  EXPECT_NE(error_of({"--sizes", "8", "-b", "8"}).find("cannot be combined"), std::string::npos);
  EXPECT_NE(error_of({"--transport", "ib"}).find("--transport: unknown transport 'ib'"), std::string::npos);
  EXPECT_NE(error_of({"--inplace", "maybe"}).find("--inplace: unknown choice 'maybe'"), std::string::npos);
  EXPECT_NE(error_of({"--iters", "-3"}).find("--iters -3"), std::string::npos);
  EXPECT_NE(error_of({"--min-iters", "9", "--max-iters", "3"}).find("--max-iters 3 is below --min-iters 9"),
            std::string::npos);
  EXPECT_NE(error_of({"--frobnicate"}).find("frobnicate"), std::string::npos);
  EXPECT_NE(error_of({"--warmup", "abc"}).find("warmup"), std::string::npos);
}

TEST(Cli, ProgressChoice) {
  EXPECT_EQ(parse({}).progress, ProgressChoice::automatic);
  EXPECT_EQ(parse({"--progress", "on"}).progress, ProgressChoice::on);
  EXPECT_EQ(parse({"sweep", "--progress", "off"}).progress, ProgressChoice::off);
  EXPECT_EQ(error_of({"--progress", "sometimes"}),
            "--progress: unknown choice 'sometimes' (choose from auto, on, off)");
}

TEST(Cli, EveryErrorIsOneLine) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--frobnicate"}, {"sweep", "extra"}, {"--root"}}) {
    const std::string e = error_of(args);
    EXPECT_FALSE(e.empty());
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(Cli, RootMustBeARank) {
  const RunConfig c = parse({"--ops", "broadcast", "--root", "4"});
  EXPECT_THROW(validate_for_world(c, 4), UsageError);
  EXPECT_NO_THROW(validate_for_world(c, 5));
  // A root is irrelevant when no rooted op runs.
  EXPECT_NO_THROW(validate_for_world(parse({"--ops", "allreduce", "--root", "9"}), 2));
  try {
    validate_for_world(c, 4);
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--root 4: there are only 4 ranks (0 to 3)");
  }
}

TEST(Cli, DefaultsLiveInTheConfigAndTheHelpShowsThem) {
  const RunConfig d;
  const RunConfig c = parse({"sweep"});
  EXPECT_EQ(c.iterations.warmup, d.iterations.warmup);
  EXPECT_EQ(c.iterations.min_time_ms, d.iterations.min_time_ms);
  EXPECT_EQ(c.iterations.max_iters, d.iterations.max_iters);
  EXPECT_EQ(c.gpu.timeout_s, d.gpu.timeout_s);
  EXPECT_EQ(c.rank_time, RankTime::mean);
  EXPECT_EQ(c.sizes.front(), d.size_range.min_bytes);
  EXPECT_EQ(c.sizes.back(), d.size_range.max_bytes);
  const std::string help = parse_command_line({"sweep", "--help"}).text;
  EXPECT_NE(help.find("Warm-up iterations before each measurement  [5]"), std::string::npos) << help;
  EXPECT_NE(help.find("Largest message size  [64M]"), std::string::npos);
  EXPECT_NE(help.find("[allreduce,allgather,sendrecv]"), std::string::npos);
  EXPECT_NE(help.find("auto, nccl, mpi"), std::string::npos);
  const std::string scale_help = parse_command_line({"scale", "--help"}).text;
  EXPECT_NE(scale_help.find("[256M]"), std::string::npos);
  EXPECT_NE(scale_help.find("[2G]"), std::string::npos);
  EXPECT_NE(parse_command_line({"p2p", "--help"}).text.find("Largest message size  [4M]"), std::string::npos);
}

TEST(Cli, NcclTestsShortFlagsMeanTheSame) {
  const RunConfig c = parse({"sweep", "-n", "7",  "-w", "2",  "-c", "0",  "-d", "double", "-o", "max", "-r", "1",
                             "-G",    "1",  "-T", "60", "-a", "0",  "-b", "8",  "-e",     "64", "-f",  "2"});
  EXPECT_EQ(c.iterations.fixed_iters, 7);
  EXPECT_EQ(c.iterations.warmup, 2);
  EXPECT_FALSE(c.check);
  EXPECT_EQ(c.dtypes, std::vector<DType>{DType::float64});
  EXPECT_EQ(c.redops, std::vector<RedOp>{RedOp::max});
  EXPECT_EQ(c.root, 1);
  EXPECT_TRUE(c.gpu.graph);
  EXPECT_EQ(c.gpu.timeout_s, 60.0);
  EXPECT_EQ(c.rank_time, RankTime::rank0);
  EXPECT_EQ(c.sizes, (std::vector<std::size_t>{8, 16, 32, 64}));
  EXPECT_TRUE(parse({"sweep", "-c", "1"}).check);
  EXPECT_FALSE(parse({"sweep", "-G", "0"}).gpu.graph);
  EXPECT_EQ(parse({"sweep", "-a", "1"}).rank_time, RankTime::mean);
  EXPECT_EQ(parse({"sweep", "-a", "2"}).rank_time, RankTime::min);
  EXPECT_EQ(parse({"sweep", "-a", "3"}).rank_time, RankTime::max);
  EXPECT_EQ(parse({"sweep", "--rank-time", "max"}).rank_time, RankTime::max);
  EXPECT_EQ(error_of({"sweep", "-a", "4"}), "-a/--rank-time: unknown choice '4' (choose from rank0, mean, min, max)");
  EXPECT_EQ(error_of({"sweep", "-c", "1", "--no-check"}),
            "--no-check: cannot be combined with -c 1 (give one of them)");
  EXPECT_EQ(error_of({"sweep", "-c", "-1"}), "-c -1: must be 0 (no check) or above");
  EXPECT_EQ(error_of({"sweep", "-G", "-1"}), "-G -1: must be 0 or above");
}

TEST(Cli, NcclTestsFlagsWithoutAnEquivalentSayWhatToDoInstead) {
  EXPECT_EQ(error_of({"-t", "4"}),
            "fabricbench has no -t: one rank per GPU, launched by mpirun (or --gpus N in one process without a "
            "launcher)");
  for (const char* flag : {"-g", "-i", "-m", "-N", "-p", "-z", "-y", "-C", "-R"}) {
    const std::string e = error_of({"sweep", flag, "1"});
    EXPECT_EQ(e.rfind(std::string("fabricbench has no ") + flag + ": ", 0), 0U) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  EXPECT_EQ(error_of({"sweep", "-z"}).rfind("fabricbench has no -z: ", 0), 0U);
}

TEST(Cli, UnknownOptionsAndSubcommandsGetASuggestion) {
  EXPECT_EQ(error_of({"sweep", "--warmpu", "3"}), "--warmpu: unknown option of sweep; did you mean --warmup?");
  EXPECT_EQ(error_of({"swep"}), "'swep' is not a subcommand; did you mean sweep?");
  EXPECT_EQ(error_of({"bogus"}),
            "'bogus' is not a subcommand (choose from run, sweep, scale, p2p, topo, storage, report, version, help)");
  EXPECT_EQ(error_of({"sweep", "--frobnicate"}),
            "--frobnicate: unknown option of sweep (fabricbench sweep --help lists them)");
}

TEST(Cli, EachSubcommandRefusesTheOptionsItWouldIgnore) {
  EXPECT_EQ(error_of({"scale", "--dtype", "float"}), "--dtype: scale does not use it (an option of run, sweep)");
  EXPECT_EQ(error_of({"p2p", "--ops", "allreduce"}), "--ops: p2p does not use it (an option of run, sweep)");
  EXPECT_EQ(error_of({"sweep", "--pair-bytes", "1M"}), "--pair-bytes: sweep does not use it (an option of run, p2p)");
  EXPECT_EQ(error_of({"topo", "--iters", "3"}), "--iters: topo does not use it (an option of run, sweep, scale, p2p)");
  EXPECT_EQ(error_of({"p2p", "-b", "8"}), "--min-bytes: p2p uses it only with --sweep");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--pair-bytes", "1M"}),
            "--pair-bytes: p2p --sweep does not use it (the pair matrix does)");
  EXPECT_EQ(error_of({"scale", "--csv", "a.csv"}), "--csv: scale does not use it (an option of run, sweep, report)");
}

TEST(Cli, GatesOnEveryMeasuringCommand) {
  for (const char* command : {"run", "sweep", "scale", "p2p"}) {
    const RunConfig c = parse({command, "--expect", "allreduce.busbw>=1", "--expect-reference", "--fail-on-warn"});
    EXPECT_EQ(c.report.expects, std::vector<std::string>{"allreduce.busbw>=1"}) << command;
    EXPECT_TRUE(c.report.expect_reference);
    EXPECT_TRUE(c.report.fail_on_warn);
  }
  EXPECT_NE(error_of({"sweep", "--expect", "allreduce.busbw"}).find("--expect 'allreduce.busbw'"), std::string::npos);
}

TEST(Cli, VersionFlagZeroCountsAndQuietProgress) {
  EXPECT_EQ(parse({"--version"}).command, Command::version);
  EXPECT_EQ(error_of({"sweep", "--gpus", "0"}), "--gpus 0: must be 1 or above");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--window", "0"}), "--window 0: must be 1 or above");
  EXPECT_EQ(error_of({"--min-iters", "0"}), "--min-iters 0: must be 1 or above");
  // -q silences the table; an explicit --progress on stays on.
  const RunConfig c = parse({"sweep", "-q", "--progress", "on"});
  EXPECT_TRUE(c.quiet);
  EXPECT_EQ(c.progress, ProgressChoice::on);
}

TEST(Cli, SizesAreBinaryAndAmbiguousUnitsAreRefused) {
  EXPECT_EQ(parse({"sweep", "--sizes", "1KiB,1M,2MiB"}).sizes, (std::vector<std::size_t>{1024, 1U << 20, 2U << 20}));
  EXPECT_EQ(error_of({"sweep", "--sizes", "1MB"}),
            "--sizes: '1MB' is ambiguous (MB means 10^n bytes to some, 2^n or bits to others): write 1M or 1MiB, "
            "both binary");
  EXPECT_NE(error_of({"sweep", "-e", "1kb"}).find("-e/--max-bytes: '1kb' is ambiguous"), std::string::npos);
  EXPECT_NE(parse_command_line({"sweep", "--help"}).text.find("1K = 1KiB = 1024 B"), std::string::npos);
}

TEST(Cli, PointToPointSweep) {
  const RunConfig c =
      parse({"p2p", "--sweep", "-b", "1", "-e", "1K", "--ranks", "2,0", "--tests", "bw,latency", "--window", "16"});
  EXPECT_TRUE(c.p2p_sweep.enabled);
  EXPECT_EQ(c.sizes.size(), 11U);  // 1 B to 1 KiB, x2: any byte count, no element type
  EXPECT_EQ(c.sizes.front(), 1U);
  EXPECT_EQ(c.p2p_sweep.ranks, (std::vector<int>{2, 0}));
  EXPECT_EQ(c.p2p_sweep.tests, (std::vector<P2PTest>{P2PTest::bandwidth, P2PTest::latency}));
  EXPECT_EQ(c.p2p_sweep.window, 16);
  const RunConfig d = parse({"p2p", "--sweep", "--nodes", "0,3"});
  EXPECT_EQ(d.sizes.front(), 1U);
  EXPECT_EQ(d.sizes.back(), 4U << 20);
  EXPECT_EQ(d.p2p_sweep.nodes, (std::vector<int>{0, 3}));
  EXPECT_EQ(d.p2p_sweep.tests.size(), 3U);
  EXPECT_FALSE(parse({"p2p"}).p2p_sweep.enabled);
  EXPECT_EQ(error_of({"p2p", "--sweep", "--ranks", "0"}), "--ranks 0: give two ranks, e.g. 0,1");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--ranks", "0,x"}), "--ranks: 'x' is not a rank (a whole number, 0 or above)");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--ranks", "0,1", "--nodes", "0,1"}),
            "--ranks: cannot be combined with --nodes (give one of them)");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--tests", "pingpong"}),
            "--tests: unknown test 'pingpong' (choose from latency, bw, bibw)");
}

TEST(Cli, GapsThatOnceMeantTheDefaultOrAnEndlessRunAreRefused) {
  EXPECT_EQ(error_of({"sweep", "--sizes", ""}), "--sizes: empty value");
  EXPECT_EQ(error_of({"sweep", "--json", ""}), "--json: empty value");
  EXPECT_EQ(error_of({"sweep", "--iters", "0"}), "--iters 0: must be 1 or above");
  EXPECT_EQ(error_of({"sweep", "--check", "--no-check"}),
            "--check: cannot be combined with --no-check (give one of them)");
  EXPECT_EQ(error_of({"scale", "--overlap", "nan"}), "--overlap nan: must be between 0 and 1");
  EXPECT_EQ(error_of({"sweep", "--price-per-gpu-hour", "-5"}),
            "--price-per-gpu-hour -5: must be a finite price, 0 or above");
  EXPECT_NE(error_of({"sweep", "-f", "1.0000001"}).find("would have more than 1000 sizes"), std::string::npos);
  EXPECT_NE(error_of({"sweep", "-e", "18446744073709551612"}).find("above the largest message size"),
            std::string::npos);
  EXPECT_EQ(error_of({"sweep", "--check"}), "");
  EXPECT_FALSE(parse({"sweep", "--no-check"}).check);
  // The first iteration is checked by default; --check-all and nccl-tests'
  // -c 2 and above check every warm-up and the last timed one too.
  EXPECT_FALSE(parse({"sweep"}).check_all);
  EXPECT_FALSE(parse({"sweep", "-c", "1"}).check_all);
  EXPECT_TRUE(parse({"sweep", "--check-all"}).check_all);
  EXPECT_TRUE(parse({"sweep", "-c", "3"}).check_all);
  EXPECT_TRUE(parse({"sweep", "-c", "3"}).check);
  EXPECT_EQ(error_of({"sweep", "--check-all", "--no-check"}),
            "--check-all: cannot be combined with --no-check or -c 0 (give one of them)");
  EXPECT_EQ(parse({"sweep", "--iters", "3"}).iterations.fixed_iters, 3);
  EXPECT_EQ(parse({"sweep", "--price-per-gpu-hour", "0"}).report.price_per_gpu_hour, 0.0);
}

TEST(Cli, WholeNumbersAreDecimal) {
  // Not octal, not hexadecimal: "010" is ten, and other forms are refused.
  EXPECT_EQ(parse({"sweep", "--iters", "010"}).iterations.fixed_iters, 10);
  EXPECT_EQ(parse({"sweep", "--iters", "+7"}).iterations.fixed_iters, 7);
  EXPECT_EQ(parse({"sweep", "-w", "0"}).iterations.warmup, 0);
  EXPECT_EQ(parse({"sweep", "-w", "000"}).iterations.warmup, 0);
  EXPECT_EQ(error_of({"sweep", "--iters", "0x10"}), "--iters: '0x10' is not a whole decimal number");
  EXPECT_EQ(error_of({"sweep", "--iters", "1e3"}), "--iters: '1e3' is not a whole decimal number");
  EXPECT_EQ(error_of({"sweep", "--iters", " 5"}), "--iters: ' 5' is not a whole decimal number");
  EXPECT_EQ(error_of({"sweep", "--iters", "-03"}), "--iters -3: must be 1 or above");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--window", "0b11"}), "--window: '0b11' is not a whole decimal number");
  // A count is bounded before anything is sized by it.
  EXPECT_EQ(error_of({"p2p", "--sweep", "--window", "2147483647"}),
            "--window 2147483647: must be at most 4096 messages in flight");
  EXPECT_EQ(parse({"p2p", "--sweep", "--window", "4096"}).p2p_sweep.window, 4096);
  EXPECT_EQ(error_of({"sweep", "--iters", "2147483647"}), "--iters 2147483647: must be at most 1000000 iterations");
  EXPECT_EQ(error_of({"sweep", "--max-iters", "1000001"}), "--max-iters 1000001: must be at most 1000000 iterations");
  EXPECT_EQ(error_of({"sweep", "-w", "99999999"}), "--warmup 99999999: must be at most 1000000 iterations");
  EXPECT_EQ(parse({"sweep", "--iters", "1000000"}).iterations.fixed_iters, 1000000);
}

TEST(Cli, ATimeoutBelowASecondIsRefused) {
  EXPECT_EQ(error_of({"sweep", "-T", "0.0005"}),
            "--timeout 0.0005: must be at least 1 second (the deadline covers start-up too)");
  EXPECT_EQ(error_of({"sweep", "-T", "0.999"}),
            "--timeout 0.999: must be at least 1 second (the deadline covers start-up too)");
  EXPECT_EQ(error_of({"sweep", "-T", "-1"}), "--timeout -1: must be above 0 seconds");
  EXPECT_EQ(parse({"sweep", "-T", "1"}).gpu.timeout_s, 1.0);
}

TEST(Cli, PlacementAndStorageOptionsParseAndRefuseBadValues) {
  const RunConfig run =
      parse({"run", "--storage-path", "/scratch", "--file-bytes", "64M", "--storage-per-node", "--island-ratio", "3",
             "--bisection-halvings", "5", "--bisection-seed", "9", "--oversubscription-limit", "1.5"});
  EXPECT_EQ(run.storage.path, "/scratch");
  EXPECT_EQ(run.storage.file_bytes, std::size_t{64} << 20);
  EXPECT_TRUE(run.storage.per_node);
  EXPECT_FALSE(run.storage.buffered);
  EXPECT_EQ(run.placement.island_ratio, 3.0);
  EXPECT_EQ(run.placement.bisection_halvings, 5);
  EXPECT_EQ(run.placement.bisection_seed, 9U);
  EXPECT_EQ(run.placement.oversubscription_limit, 1.5);
  const RunConfig storage = parse({"storage", "--storage-path", "/scratch", "--storage-buffered", "-T", "30"});
  EXPECT_EQ(storage.command, Command::storage);
  EXPECT_EQ(storage.transport, TransportChoice::mpi);
  EXPECT_TRUE(storage.storage.buffered);
  EXPECT_EQ(storage.gpu.timeout_s, 30);
  EXPECT_EQ(parse({"p2p", "--bisection-halvings", "0"}).placement.bisection_halvings, 0);

  EXPECT_EQ(error_of({"storage"}), "--storage-path is required");
  EXPECT_EQ(error_of({"run", "--file-bytes", "1M"}), "--file-bytes: needs --storage-path DIR");
  EXPECT_EQ(error_of({"run", "--storage-per-node"}), "--storage-per-node: needs --storage-path DIR");
  EXPECT_EQ(error_of({"storage", "--storage-path", "/x", "--file-bytes", "0"}),
            "--file-bytes: the size must be above 0");
  EXPECT_EQ(error_of({"run", "--island-ratio", "1"}), "--island-ratio 1: must be a finite number above 1");
  EXPECT_EQ(error_of({"run", "--bisection-halvings", "-1"}), "--bisection-halvings -1: must be from 0 to 1000");
  EXPECT_EQ(error_of({"run", "--oversubscription-limit", "0.5"}),
            "--oversubscription-limit 0.5: must be a finite number, 1 or above");
  EXPECT_EQ(error_of({"p2p", "--sweep", "--bisection-halvings", "2"}),
            "--bisection-halvings: p2p --sweep does not use it (the pair matrix does)");
  EXPECT_NE(error_of({"sweep", "--storage-path", "/x"}).find("--storage-path: sweep does not use it"),
            std::string::npos);
  EXPECT_NE(error_of({"storage", "--storage-path", "/x", "--ops", "allreduce"}).find("--ops: storage does not use it"),
            std::string::npos);
}

}  // namespace
}  // namespace fabricbench
