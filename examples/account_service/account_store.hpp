// The service's tables and the statements loginByUid runs on them.
//
//   app_user    (id bigserial, uid bigint, created_at timestamptz)
//   app_account (id bigserial, uid bigint, user_id bigint, created_by text, fencing_token bigint,
//                created_at timestamptz)
// and dlock::postgres's dlock_fence (installed by main.cpp): per lock path, the newest fencing
// token that wrote under it.
//
// The issue calls the first table "user"; that is a reserved word in PostgreSQL, hence app_user.
// There is deliberately NO unique constraint on uid: the lock is what keeps a uid from being
// created twice, and the end-to-end test counts duplicates to show it. (A production schema would
// add UNIQUE (uid) as well, as a second line of defence.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "db.hpp"

namespace account_service::store {

// CREATE TABLE / INDEX IF NOT EXISTS, inside `tx`. Two transactions doing this at once can both
// find a table missing and one then fails on a catalog unique index, so callers serialize it
// (main.cpp holds a dlock lock bound to the transaction).
void create_schema(PgTransaction& tx);

// The oldest row for uid (the lowest id), if any.
std::optional<std::int64_t> find_user(PgTransaction& tx, std::int64_t uid);
std::optional<std::int64_t> find_account(PgTransaction& tx, std::int64_t uid);

// Inserts a row and returns its id. `fencing_token` is the lock's token (nullopt without a lock):
// kept with the account, it records which acquisition created it.
std::int64_t insert_user(PgTransaction& tx, std::int64_t uid);
std::int64_t insert_account(PgTransaction& tx, std::int64_t uid, std::int64_t user_id, const std::string& created_by,
                            std::optional<std::int64_t> fencing_token);

}  // namespace account_service::store
