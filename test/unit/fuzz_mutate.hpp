// Random mutations of a valid file, for the fuzz tests of the readers: byte flips,
// inserted and deleted bytes, duplicated and dropped chunks, truncation, and (for
// text) numbers replaced by extreme values. Fixed seeds make every run the same.
#pragma once
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fuzz {

/// One to three mutations of `s`; `text` adds JSON-aware ones (structural characters,
/// extreme numbers).
inline std::string mutate(std::string s, std::mt19937_64& rng, bool text) {
  auto uni = [&](std::size_t n) { return n == 0 ? std::size_t(0) : std::size_t(rng() % n); };
  static const char* const structural = "{}[],:\"\\-+.eE0123456789 tfnul";
  static const char* const numbers[] = {"-1", "0", "1e308", "-0.0", "1e-400", "9223372036854775807",
                                        "18446744073709551616", "2251799.813685248", "4611686018427387904",
                                        "0.5", "NaN", "[]", "{}", "\"x\"", "null", "true"};
  const int count = 1 + int(rng() % 3);
  for (int m = 0; m < count; ++m) {
    const std::size_t at = uni(s.size() + 1);
    switch (rng() % (text ? 8 : 6)) {
      case 0:  // flip bits of one byte
        if (!s.empty()) s[at % s.size()] = char(s[at % s.size()] ^ char(1 + rng() % 255));
        break;
      case 1:  // insert a random byte
        s.insert(at, 1, char(rng() % 256));
        break;
      case 2:  // delete a few bytes
        s.erase(at, 1 + uni(8));
        break;
      case 3: {  // duplicate a chunk
        const std::size_t from = uni(s.size()), len = 1 + uni(64);
        s.insert(at, s.substr(from, len));
        break;
      }
      case 4:  // drop a chunk
        s.erase(at, 1 + uni(64));
        break;
      case 5:  // truncate
        s.resize(at);
        break;
      case 6:  // a structural character
        s.insert(at, 1, structural[uni(std::char_traits<char>::length(structural))]);
        break;
      default: {  // replace a number by an extreme one
        std::size_t b = at;
        while (b < s.size() && !(s[b] >= '0' && s[b] <= '9')) ++b;
        std::size_t e = b;
        while (e < s.size() && ((s[e] >= '0' && s[e] <= '9') || s[e] == '.' || s[e] == 'e' || s[e] == '-'))
          ++e;
        if (b < s.size()) s.replace(b, e - b, numbers[uni(std::size(numbers))]);
      }
    }
  }
  return s;
}

}  // namespace fuzz
