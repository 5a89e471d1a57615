// libFuzzer target: arbitrary bytes, cut into arbitrary chunks, through the frame reader. It
// must never crash, never hand out a payload larger than the limit, and stop at the first
// error the way a connection does. The opening lines keep their order: a logon only as the
// first event and within 512 bytes, the session hello only first or right after the logon.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "net/framing.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  // The first byte picks the chunk size, the second the limit.
  std::size_t chunk = 1 + data[0] % 17;
  std::size_t limit = 1 + data[1] * 4;
  data += 2;
  size -= 2;
  net::FrameReader reader(limit);
  std::string out;
  std::size_t events = 0;  // events other than NeedMore so far
  bool logon = false;      // the first event was a logon
  for (std::size_t pos = 0; pos < size; pos += chunk) {
    reader.feed(reinterpret_cast<const char*>(data) + pos, std::min(chunk, size - pos));
    for (;;) {
      auto event = reader.next(out);
      if (event == net::FrameReader::Event::NeedMore) break;
      if (event == net::FrameReader::Event::Error) return 0;
      if (event == net::FrameReader::Event::Request) check(out.size() <= limit);
      if (event == net::FrameReader::Event::Logon) {
        check(events == 0);
        check(out.size() <= 512);
        logon = true;
      }
      if (event == net::FrameReader::Event::SessionHello)
        check(events == 0 || (logon && events == 1));
      ++events;
    }
  }
  return 0;
}
