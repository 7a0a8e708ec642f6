#include "store/event_store.h"

#include <sqlite3.h>

#include <chrono>

#include "util/sha256.h"

namespace longhaul {
namespace {

constexpr int kApplicationId = 0x4c48524e;  // "LHRN": marks a file as a longhaul run store

constexpr const char* kSchema = R"sql(
CREATE TABLE events (
  seq     INTEGER PRIMARY KEY,
  time    REAL    NOT NULL,
  type    TEXT    NOT NULL,
  parent  INTEGER NOT NULL DEFAULT 0,
  payload TEXT    NOT NULL
);
CREATE TABLE blobs (
  hash TEXT PRIMARY KEY,
  size INTEGER NOT NULL,
  data BLOB NOT NULL
);
-- The log is append-only: the database itself refuses edits and deletions.
CREATE TRIGGER events_no_update BEFORE UPDATE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
)sql";

// A prepared statement that finalizes itself.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_;
};

std::string db_error(sqlite3* db, std::string_view what) {
  return std::string(what) + ": " + sqlite3_errmsg(db);
}

Result<sqlite3*> open_db(const std::filesystem::path& path, int flags) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{"cannot open " + path.string() + ": " + msg};
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

}  // namespace

double wall_clock_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

Status EventStore::exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return Error{msg};
  }
  return ok_status();
}

Result<std::unique_ptr<EventStore>> EventStore::create(const std::filesystem::path& path) {
  if (std::filesystem::exists(path)) return Error{path.string() + " already exists"};
  auto db = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (!db) return Error{db.error()};
  std::unique_ptr<EventStore> store(new EventStore(*db));
  std::string setup = "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA application_id=" +
                      std::to_string(kApplicationId) +
                      "; PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  if (auto s = store->exec(setup.c_str()); !s) return Error{s.error()};
  if (auto s = store->exec(kSchema); !s) return Error{"cannot create schema: " + s.error()};
  return store;
}

Result<std::unique_ptr<EventStore>> EventStore::open(const std::filesystem::path& path,
                                                     bool read_only) {
  if (!std::filesystem::exists(path)) return Error{path.string() + " does not exist"};
  auto db = open_db(path, read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  if (!db) return Error{db.error()};
  std::unique_ptr<EventStore> store(new EventStore(*db));
  Stmt q(*db, "PRAGMA application_id");
  if (!q.ok() || sqlite3_step(q.get()) != SQLITE_ROW || sqlite3_column_int(q.get(), 0) != kApplicationId)
    return Error{path.string() + " is not a longhaul run store"};
  Stmt v(*db, "PRAGMA user_version");
  if (!v.ok() || sqlite3_step(v.get()) != SQLITE_ROW)
    return Error{db_error(*db, "cannot read schema version")};
  int version = sqlite3_column_int(v.get(), 0);
  if (version != kSchemaVersion)
    return Error{path.string() + " has event schema version " + std::to_string(version) +
                 "; this longhaul reads version " + std::to_string(kSchemaVersion)};
  if (!read_only)
    if (auto s = store->exec("PRAGMA synchronous=FULL;"); !s) return Error{s.error()};
  return store;
}

EventStore::~EventStore() { sqlite3_close(db_); }

Result<int64_t> EventStore::append(std::string_view type, const nlohmann::json& payload,
                                   int64_t parent) {
  Stmt s(db_, "INSERT INTO events(time, type, parent, payload) VALUES (?, ?, ?, ?)");
  if (!s.ok()) return Error{db_error(db_, "cannot append event")};
  std::string text = payload.dump();
  last_time_ = clock_ ? clock_() : wall_clock_seconds();
  sqlite3_bind_double(s.get(), 1, last_time_);
  sqlite3_bind_text(s.get(), 2, type.data(), int(type.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.get(), 3, parent);
  sqlite3_bind_text(s.get(), 4, text.data(), int(text.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error{db_error(db_, "cannot append event")};
  return int64_t(sqlite3_last_insert_rowid(db_));
}

Result<std::string> EventStore::put_blob(std::string_view data) {
  std::string hash = sha256_hex(data);
  Stmt s(db_, "INSERT OR IGNORE INTO blobs(hash, size, data) VALUES (?, ?, ?)");
  if (!s.ok()) return Error{db_error(db_, "cannot store blob")};
  sqlite3_bind_text(s.get(), 1, hash.data(), int(hash.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s.get(), 2, int64_t(data.size()));
  sqlite3_bind_blob64(s.get(), 3, data.data(), data.size(), SQLITE_STATIC);
  if (sqlite3_step(s.get()) != SQLITE_DONE) return Error{db_error(db_, "cannot store blob")};
  return hash;
}

Result<std::string> EventStore::get_blob(std::string_view hash) const {
  Stmt s(db_, "SELECT data FROM blobs WHERE hash = ?");
  if (!s.ok()) return Error{db_error(db_, "cannot read blob")};
  sqlite3_bind_text(s.get(), 1, hash.data(), int(hash.size()), SQLITE_TRANSIENT);
  int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return Error{"no blob " + std::string(hash)};
  if (rc != SQLITE_ROW) return Error{db_error(db_, "cannot read blob")};
  const char* p = static_cast<const char*>(sqlite3_column_blob(s.get(), 0));
  return std::string(p ? p : "", size_t(sqlite3_column_bytes(s.get(), 0)));
}

Result<std::vector<Event>> EventStore::read(int64_t after_seq) const {
  Stmt s(db_, "SELECT seq, time, type, parent, payload FROM events WHERE seq > ? ORDER BY seq");
  if (!s.ok()) return Error{db_error(db_, "cannot read events")};
  sqlite3_bind_int64(s.get(), 1, after_seq);
  std::vector<Event> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    Event e;
    e.seq = sqlite3_column_int64(s.get(), 0);
    e.time = sqlite3_column_double(s.get(), 1);
    e.type = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 2));
    e.parent = sqlite3_column_int64(s.get(), 3);
    const char* text = reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 4));
    e.payload = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (e.payload.is_discarded())
      return Error{"event " + std::to_string(e.seq) + " has a payload that is not JSON"};
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return Error{db_error(db_, "cannot read events")};
  return out;
}

Result<int64_t> EventStore::last_seq() const {
  Stmt s(db_, "SELECT COALESCE(MAX(seq), 0) FROM events");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return Error{db_error(db_, "cannot read events")};
  return int64_t(sqlite3_column_int64(s.get(), 0));
}

Status EventStore::begin_batch() { return exec("BEGIN IMMEDIATE"); }
Status EventStore::commit_batch() { return exec("COMMIT"); }

Result<std::string> EventStore::integrity_check() const {
  Stmt s(db_, "PRAGMA integrity_check");
  if (!s.ok()) return Error{db_error(db_, "cannot check integrity")};
  std::string out;
  while (sqlite3_step(s.get()) == SQLITE_ROW) {
    if (!out.empty()) out += "\n";
    out += reinterpret_cast<const char*>(sqlite3_column_text(s.get(), 0));
  }
  return out;
}

}  // namespace longhaul
