#pragma once
// A stream for the terminal: what the run prints about its nodes (host
// names, CPU, OS and NIC strings probed on every node, verdict reasons)
// reaches the terminal only through terminal_safe's escaping, so a probed
// string cannot clear the screen or set its title.

#include <ostream>
#include <streambuf>

namespace fabricbench {

class TerminalSafeStream final : public std::ostream {
 public:
  explicit TerminalSafeStream(std::ostream& terminal);
  TerminalSafeStream(const TerminalSafeStream&) = delete;
  TerminalSafeStream& operator=(const TerminalSafeStream&) = delete;
  ~TerminalSafeStream() override;

 private:
  // Unbuffered: each write (a formatted line arrives whole) is escaped and
  // passed on at once, so text written here and text written straight to
  // `out` keep their order. A 0xC2 byte at the end of a write waits for the
  // next one (together they may be a C1 control).
  class Escaper final : public std::streambuf {
   public:
    explicit Escaper(std::ostream& out) : out_(&out) {}

   protected:
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int_type overflow(int_type c) override;
    int sync() override;

   private:
    std::ostream* out_;
    bool held_c2_ = false;
  };
  Escaper escaper_;
};

}  // namespace fabricbench
