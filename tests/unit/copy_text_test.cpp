// store::CopyText, the projection's COPY rows in PostgreSQL's text format:
//   - fields are tab-separated, rows end with a newline, NULL is \N;
//   - numbers are written exactly (negative, the largest int64, decimals in canonical form);
//   - text is escaped only where COPY's text format needs it (backslash, tab, newline, CR);
//   - an array field lists the ids it is given, "{}" when none;
//   - rows() counts complete rows.
// What PostgreSQL makes of the text is checked end to end by the tests that read the projected
// tables back (restart_test, journal_test, archive_test).
#include "store/copy_text.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "support/decimal.hpp"

using store::CopyText;
using testing_support::dec;

TEST_CASE("rows are tab-separated fields ended by a newline, NULL as \\N", "[copy_text]") {
  CopyText rows;
  CHECK(rows.rows() == 0);
  rows.field(std::int64_t{7})
      .field(std::string("1001"))
      .field(std::string("X"))
      .field(dec("-12.5"));
  rows.null().field(std::string("{3,4}"));
  CHECK(rows.rows() == 0);  // not complete yet
  rows.end_row();
  rows.field(std::int64_t{8}).null().end_row();
  CHECK(rows.rows() == 2);
  CHECK(rows.text() == "7\t1001\tX\t-12.5\t\\N\t{3,4}\n8\t\\N\n");
}

TEST_CASE("numbers are written exactly", "[copy_text]") {
  CopyText rows;
  rows.field(std::numeric_limits<std::int64_t>::max())
      .field(std::numeric_limits<std::int64_t>::min())
      .field(std::int64_t{0})
      .field(dec("125"))
      .field(dec("0.000001"))
      .field(dec("999999999999.999999"))
      .end_row();
  CHECK(rows.text() ==
        "9223372036854775807\t-9223372036854775808\t0\t125\t0.000001\t999999999999.999999\n");
}

TEST_CASE("text is escaped only where COPY's text format needs it", "[copy_text]") {
  CopyText rows;
  rows.field(std::string("plain ASCII, with spaces and \"quotes\"")).end_row();
  rows.field(std::string("a\\b\tc\nd\re")).field(std::string("")).end_row();
  CHECK(rows.text() ==
        "plain ASCII, with spaces and \"quotes\"\n"
        "a\\\\b\\tc\\nd\\re\t\n");
}

TEST_CASE("an array field lists the second of each pair, {} for none", "[copy_text]") {
  const std::vector<std::pair<std::int64_t, std::int64_t>> fills{{5, 7}, {5, 9}, {6, 10}};
  CopyText rows;
  rows.field(std::int64_t{5}).array_field(fills.begin(), fills.begin() + 2).end_row();
  rows.field(std::int64_t{6}).array_field(fills.begin() + 2, fills.end()).end_row();
  rows.field(std::int64_t{7}).array_field(fills.end(), fills.end()).end_row();
  CHECK(rows.text() == "5\t{7,9}\n6\t{10}\n7\t{}\n");
}
