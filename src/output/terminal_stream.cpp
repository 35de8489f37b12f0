#include "fabricbench/output/terminal_stream.hpp"

#include <string>

#include "fabricbench/core/text_safety.hpp"

namespace fabricbench {

TerminalSafeStream::TerminalSafeStream(std::ostream& terminal) : std::ostream(nullptr), escaper_(terminal) {
  rdbuf(&escaper_);
}

TerminalSafeStream::~TerminalSafeStream() { escaper_.pubsync(); }

TerminalSafeStream::Escaper::int_type TerminalSafeStream::Escaper::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  std::string text;
  if (held_c2_) text += '\xc2';
  held_c2_ = ch == '\xc2';
  if (!held_c2_) text += ch;
  if (!text.empty()) *out_ << terminal_safe(text);
  return out_->good() ? c : traits_type::eof();
}

int TerminalSafeStream::Escaper::sync() {
  if (held_c2_) *out_ << '\xc2';
  held_c2_ = false;
  out_->flush();
  return out_->good() ? 0 : -1;
}

}  // namespace fabricbench
