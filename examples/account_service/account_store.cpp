#include "account_store.hpp"

namespace account_service::store {

namespace {

std::optional<std::int64_t> first_id(const dlock::postgres::Result& result) {
  if (result.rows() == 0) return std::nullopt;
  return result.int64(0, 0);
}

std::optional<std::string> text(std::optional<std::int64_t> value) {
  return value ? std::optional<std::string>(std::to_string(*value)) : std::nullopt;
}

}  // namespace

void create_schema(PgTransaction& tx) {
  tx.exec(
      "CREATE TABLE IF NOT EXISTS app_user ("
      " id bigserial PRIMARY KEY,"
      " uid bigint NOT NULL,"
      " created_at timestamptz NOT NULL DEFAULT now())");
  tx.exec(
      "CREATE TABLE IF NOT EXISTS app_account ("
      " id bigserial PRIMARY KEY,"
      " uid bigint NOT NULL,"
      " user_id bigint NOT NULL REFERENCES app_user (id),"
      " created_by text NOT NULL,"
      " fencing_token bigint,"
      " created_at timestamptz NOT NULL DEFAULT now())");
  // Plain (non-unique) indexes: lookups by uid stay fast, duplicates stay possible.
  tx.exec("CREATE INDEX IF NOT EXISTS app_user_uid ON app_user (uid)");
  tx.exec("CREATE INDEX IF NOT EXISTS app_account_uid ON app_account (uid)");
}

std::optional<std::int64_t> find_user(PgTransaction& tx, std::int64_t uid) {
  return first_id(tx.exec("SELECT id FROM app_user WHERE uid = $1 ORDER BY id LIMIT 1", {std::to_string(uid)}));
}

std::optional<std::int64_t> find_account(PgTransaction& tx, std::int64_t uid) {
  return first_id(tx.exec("SELECT id FROM app_account WHERE uid = $1 ORDER BY id LIMIT 1", {std::to_string(uid)}));
}

std::int64_t insert_user(PgTransaction& tx, std::int64_t uid) {
  return tx.exec("INSERT INTO app_user (uid) VALUES ($1) RETURNING id", {std::to_string(uid)}).int64(0, 0);
}

std::int64_t insert_account(PgTransaction& tx, std::int64_t uid, std::int64_t user_id, const std::string& created_by,
                            std::optional<std::int64_t> fencing_token) {
  return tx
      .exec("INSERT INTO app_account (uid, user_id, created_by, fencing_token) VALUES ($1, $2, $3, $4) RETURNING id",
            {std::to_string(uid), std::to_string(user_id), created_by, text(fencing_token)})
      .int64(0, 0);
}

}  // namespace account_service::store
