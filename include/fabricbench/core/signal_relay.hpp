#pragma once
// Why a job ended, told to the lead rank by the rank that knows.
//
// A signal sent to one rank, or a rank's own deadline, ends that rank; the
// launcher then stops the others, the lead among them, with SIGTERM, and the
// lead alone saves the result. Before it ends, a rank sends its reason to
// the lead in one UDP datagram (MPI cannot be used: the main thread is
// inside it), so the saved reason names that rank and host rather than the
// lead's SIGTERM. The lead listens on every address it has; the others learn
// them, its port and a random token from one exchange at start-up, and the
// lead takes only datagrams that carry the token. A datagram that does not
// arrive (a firewall) leaves the lead's own reason, which says it came from
// the launcher.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <netinet/in.h>

#include "fabricbench/core/fd.hpp"

namespace fabricbench {

class SignalRelay {
 public:
  // The lead's end: a socket on every address; nullptr when none can be made.
  static std::unique_ptr<SignalRelay> listen();
  // The end of another rank, from the lead's text(); nullptr when it holds
  // no address (the lead could not listen).
  static std::unique_ptr<SignalRelay> toward(std::string_view lead_text);

  // The lead's: what the others need ("TOKEN PORT ADDRESS..."); "" for a sender.
  [[nodiscard]] std::string text() const;
  // The lead's socket, for poll().
  [[nodiscard]] int fd() const { return socket_.get(); }
  // Sends `reason` to each of the lead's addresses; never blocks or throws.
  void tell(std::string_view reason) const noexcept;
  // The lead's: one reason waiting that carries the token, if any.
  [[nodiscard]] std::optional<std::string> heard() const;

  // The longest reason sent, in bytes.
  static constexpr std::size_t max_reason = 1000;

 private:
  SignalRelay() = default;
  Fd socket_;               // the lead's listener, or a sender's IPv6 socket
  Fd socket4_;              // a sender's IPv4 socket
  std::string token_;       // 32 hex digits
  std::uint16_t port_ = 0;  // the lead's, host order
  std::vector<sockaddr_in6> to6_;
  std::vector<sockaddr_in> to4_;
  std::vector<std::string> addresses_;  // the lead's, as text
  bool listening_ = false;
};

}  // namespace fabricbench
