#include "fabricbench/output/terminal_stream.hpp"

#include <string>

#include "fabricbench/core/text_safety.hpp"

namespace fabricbench {

TerminalSafeStream::TerminalSafeStream(std::ostream& terminal) : std::ostream(nullptr), escaper_(terminal) {
  rdbuf(&escaper_);
}

TerminalSafeStream::~TerminalSafeStream() { escaper_.pubsync(); }

std::streamsize TerminalSafeStream::Escaper::xsputn(const char* s, std::streamsize n) {
  if (n <= 0) return 0;
  // A 0xC2 held from the last write leads this one; one at the end waits.
  std::string text;
  text.reserve(static_cast<std::size_t>(n) + 1);
  if (held_c2_) text += '\xc2';
  text.append(s, static_cast<std::size_t>(n));
  held_c2_ = text.back() == '\xc2';
  if (held_c2_) text.pop_back();
  if (!text.empty()) *out_ << terminal_safe(text);
  return out_->good() ? n : 0;
}

TerminalSafeStream::Escaper::int_type TerminalSafeStream::Escaper::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  const char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

int TerminalSafeStream::Escaper::sync() {
  if (held_c2_) *out_ << '\xc2';
  held_c2_ = false;
  out_->flush();
  return out_->good() ? 0 : -1;
}

}  // namespace fabricbench
