#include "fabricbench/core/signal_relay.hpp"

#include <cstring>
#include <sstream>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

namespace fabricbench {
namespace {

std::string random_token() {
  unsigned char bytes[16] = {};
  std::size_t done = 0;
  while (done < sizeof(bytes)) {
    const ssize_t n = ::getrandom(bytes + done, sizeof(bytes) - done, 0);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  std::string out;
  for (const unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

// The lead's addresses that another host may reach, loopback included (a
// rank on the lead's own host); IPv6 link-local ones need an interface the
// sender cannot name, and are left out.
std::vector<std::string> own_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || (a->ifa_flags & IFF_UP) == 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);  // NOLINT: the sockets API
      if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text)) != nullptr) out.emplace_back(text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      const auto* in = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);  // NOLINT: the sockets API
      if (IN6_IS_ADDR_LINKLOCAL(&in->sin6_addr)) continue;
      if (::inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof(text)) != nullptr) out.emplace_back(text);
    }
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace

std::unique_ptr<SignalRelay> SignalRelay::listen() {
  std::unique_ptr<SignalRelay> relay(new SignalRelay());
  // One IPv6 socket takes IPv4 too (mapped addresses); IPv4 alone where the
  // kernel has no IPv6.
  Fd fd(::socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.valid()) {
    int off = 0;
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    sockaddr_in6 any{};
    any.sin6_family = AF_INET6;
    any.sin6_addr = in6addr_any;
    if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(any)) != 0) fd = Fd();  // NOLINT
  }
  if (!fd.valid()) {
    fd = Fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&any), sizeof(any)) != 0)  // NOLINT
      return nullptr;
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound), &length) != 0) return nullptr;              // NOLINT
  relay->port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port  // NOLINT
                                                   : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);  // NOLINT
  relay->socket_ = std::move(fd);
  relay->token_ = random_token();
  relay->addresses_ = own_addresses();
  relay->listening_ = true;
  return relay;
}

std::unique_ptr<SignalRelay> SignalRelay::toward(std::string_view lead_text) {
  std::istringstream in{std::string(lead_text)};
  std::unique_ptr<SignalRelay> relay(new SignalRelay());
  unsigned port = 0;
  if (!(in >> relay->token_ >> port) || relay->token_.size() != 32 || port == 0 || port > 65535) return nullptr;
  relay->port_ = static_cast<std::uint16_t>(port);
  std::string address;
  while (in >> address) {
    sockaddr_in6 to6{};
    sockaddr_in to4{};
    if (::inet_pton(AF_INET, address.c_str(), &to4.sin_addr) == 1) {
      to4.sin_family = AF_INET;
      to4.sin_port = htons(relay->port_);
      relay->to4_.push_back(to4);
    } else if (::inet_pton(AF_INET6, address.c_str(), &to6.sin6_addr) == 1) {
      to6.sin6_family = AF_INET6;
      to6.sin6_port = htons(relay->port_);
      relay->to6_.push_back(to6);
    }
  }
  if (relay->to4_.empty() && relay->to6_.empty()) return nullptr;
  relay->socket_ = Fd(::socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  relay->socket4_ = Fd(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  return relay;
}

std::string SignalRelay::text() const {
  if (!listening_) return {};
  return fmt::format("{} {} {}", token_, port_, fmt::join(addresses_, " "));
}

void SignalRelay::tell(std::string_view reason) const noexcept {
  try {
    const std::string message = token_ + ' ' + std::string(reason.substr(0, max_reason));
    for (const sockaddr_in& to : to4_)
      if (socket4_.valid())
        (void)::sendto(socket4_.get(), message.data(), message.size(), MSG_DONTWAIT,
                       reinterpret_cast<const sockaddr*>(&to), sizeof(to));  // NOLINT: the sockets API
    for (const sockaddr_in6& to : to6_)
      if (socket_.valid())
        (void)::sendto(socket_.get(), message.data(), message.size(), MSG_DONTWAIT,
                       reinterpret_cast<const sockaddr*>(&to), sizeof(to));  // NOLINT: the sockets API
  } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory on the way out; the lead keeps its own reason
  }
}

std::optional<std::string> SignalRelay::heard() const {
  char buffer[64 + max_reason] = {};
  while (true) {
    const ssize_t n = ::recv(socket_.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n < 0) return std::nullopt;  // nothing (more) waiting
    const std::string_view message(buffer, static_cast<std::size_t>(n));
    if (message.size() > token_.size() + 1 && message.substr(0, token_.size()) == token_ &&
        message[token_.size()] == ' ')
      return std::string(message.substr(token_.size() + 1));
  }
}

}  // namespace fabricbench
