#pragma once
// The part of a request that the order archive answers: which ids to look up, and how its
// answer fills the request's <status> placeholders (Applied::archive_lookups).
#include <cstddef>
#include <vector>

#include "app/apply.hpp"
#include "gates/admission.hpp"
#include "store/order_archive.hpp"

namespace app {

// The distinct ids the placeholders ask about (a request may query one order twice).
std::vector<market::OrderId> archive_ids(const Applied& applied);

// Fills every placeholder from `answer`: the order's stored status, Reason::NoSuchOrder for an
// id the account does not own, or why nothing could be read: ArchiveBusy (the archive has
// `connections` connections, --archive-connections) or ArchiveFailed (PostgreSQL failed). A
// status that would take the reply past its budget (`admission`) is refused instead.
void complete_lookups(Applied& applied, const store::OrderArchive::Answer& answer,
                      std::size_t connections, Admission& admission);

}  // namespace app
