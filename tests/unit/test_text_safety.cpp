#include "fabricbench/core/text_safety.hpp"

#include <gtest/gtest.h>

namespace fabricbench {
namespace {

TEST(TerminalSafe, EscapesControlsButKeepsLinesAndUtf8) {
  EXPECT_EQ(terminal_safe("node\x1b]0;owned\x07\x1b[2J-1"), "node\\x1b]0;owned\\x07\\x1b[2J-1");
  EXPECT_EQ(terminal_safe("a\nb\tc\rd\x7f"), "a\nb\tc\\x0dd\\x7f");
  EXPECT_EQ(terminal_safe("x\xc2\x9b"
                          "31m"),
            "x\\u009b31m");  // C1 CSI
  EXPECT_EQ(terminal_safe("gpu\xc3\xa9 ≈370"), "gpu\xc3\xa9 ≈370");
}

TEST(CsvSafeCell, DefusesFormulasAndKeepsNumbers) {
  EXPECT_EQ(csv_safe_cell("=HYPERLINK(\"http://x\",\"y\")"), "\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\"");
  EXPECT_EQ(csv_safe_cell("+cmd"), "'+cmd");
  EXPECT_EQ(csv_safe_cell("@SUM(A1)"), "'@SUM(A1)");
  EXPECT_EQ(csv_safe_cell("\tx"), "'\\x09x");
  EXPECT_EQ(csv_safe_cell("\rx"), "'\\x0dx");
  EXPECT_EQ(csv_safe_cell("-5"), "-5");
  EXPECT_EQ(csv_safe_cell("-1.5e3"), "-1.5e3");
  EXPECT_EQ(csv_safe_cell("-x"), "'-x");
  EXPECT_EQ(csv_safe_cell("-inf"), "'-inf");
  EXPECT_EQ(csv_safe_cell("-nan(0x1)"), "'-nan(0x1)");
  EXPECT_EQ(csv_safe_cell("-INF"), "'-INF");
  EXPECT_EQ(csv_safe_cell("-1e999"), "'-1e999");
  EXPECT_EQ(csv_safe_cell("plain, text"), "\"plain, text\"");
  EXPECT_EQ(csv_safe_cell("two\nlines"), "two\\x0alines");
}

}  // namespace
}  // namespace fabricbench
