#pragma once
// Which addresses the logon throttle counts as one client. Any local process can pick its source
// address anywhere in 127.0.0.0/8, so every loopback address (and ::1) is one group; an IPv6
// host usually holds a whole /64, so IPv6 addresses count by their /64; any other IPv4 address
// is a group of its own (an IPv4-mapped IPv6 address is its IPv4 address).
#include <string>
#include <string_view>

namespace auth {

inline constexpr std::string_view kLoopbackGroup = "loopback";

// "loopback", "192.0.2.7", "2001:db8:1:2::/64"; text that is no address is its own group.
std::string address_group(std::string_view ip);

}  // namespace auth
