#include "fabricbench/app/cli.hpp"

#include <gtest/gtest.h>

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
  EXPECT_EQ(parse({"sweep", "--iters", "3"}).iterations.fixed_iters, 3);
  EXPECT_EQ(parse({"sweep", "--price-per-gpu-hour", "0"}).report.price_per_gpu_hour, 0.0);
}

}  // namespace
}  // namespace fabricbench
