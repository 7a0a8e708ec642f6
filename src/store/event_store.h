// The event store: one SQLite file per run (run.db) holding an append-only `events` table and a
// content-addressed `blobs` table. It is the only truth of a run; everything else is a fold over it.
// Uses: the run loop appends intents and results; status, log and export read it; tests open it to
// check crash safety. Format: docs/event-log.md.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

struct sqlite3;

namespace longhaul {

struct Event {
  int64_t seq = 0;     // 1, 2, 3, ... with no gaps
  double time = 0;     // seconds since the Unix epoch, from the store's clock
  std::string type;
  int64_t parent = 0;  // seq of the event this one answers (an intent), or 0
  nlohmann::json payload;
};

class EventStore {
 public:
  using Clock = std::function<double()>;
  static constexpr int kSchemaVersion = 1;

  // create() fails if the file exists; open() fails if it does not or is not a run store.
  static Result<std::unique_ptr<EventStore>> create(const std::filesystem::path& path);
  static Result<std::unique_ptr<EventStore>> open(const std::filesystem::path& path,
                                                  bool read_only = false);
  ~EventStore();

  // Durable on return (synchronous=FULL), unless inside a batch, where the batch's commit is.
  Result<int64_t> append(std::string_view type, const nlohmann::json& payload, int64_t parent = 0);
  // Stores `data` under its SHA-256; storing the same bytes again is a no-op.
  Result<std::string> put_blob(std::string_view data);
  Result<std::string> get_blob(std::string_view hash) const;

  Result<std::vector<Event>> read(int64_t after_seq = 0) const;
  Result<int64_t> last_seq() const;

  // Groups appends into one transaction: one fsync for the whole group.
  Status begin_batch();
  Status commit_batch();

  // "ok", or SQLite's list of problems.
  Result<std::string> integrity_check() const;
  void set_clock(Clock clock) { clock_ = std::move(clock); }
  // The time stamped on the last event this store appended.
  double last_append_time() const { return last_time_; }

 private:
  explicit EventStore(sqlite3* db) : db_(db) {}
  Status exec(const char* sql) const;
  sqlite3* db_;
  Clock clock_;
  double last_time_ = 0;
};

double wall_clock_seconds();

}  // namespace longhaul
