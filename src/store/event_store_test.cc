#include "store/event_store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

namespace longhaul {
namespace {

std::filesystem::path temp_db(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("lh-store-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto p = dir / (name + ".db");
  for (const char* s : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + s);
  return p;
}

TEST(EventStore, AppendsInSequenceAndReadsBack) {
  auto path = temp_db("append");
  auto store = EventStore::create(path);
  ASSERT_TRUE(store.ok()) << store.error();
  double now = 100;
  (*store)->set_clock([&] { return now += 1; });
  EXPECT_EQ(*(*store)->append("a", {{"x", 1}}), 1);
  EXPECT_EQ(*(*store)->append("b", {{"y", "two"}}, 1), 2);
  auto events = (*store)->read();
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0].type, "a");
  EXPECT_EQ((*events)[1].parent, 1);
  EXPECT_EQ((*events)[1].payload["y"], "two");
  EXPECT_DOUBLE_EQ((*events)[1].time, 102);
  EXPECT_EQ((*store)->read(1)->size(), 1u);
  EXPECT_EQ(*(*store)->last_seq(), 2);
}

TEST(EventStore, SurvivesReopenAndRefusesOtherFiles) {
  auto path = temp_db("reopen");
  {
    auto store = EventStore::create(path);
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->append("a", nlohmann::json::object()).ok());
  }
  EXPECT_FALSE(EventStore::create(path).ok()) << "create must not overwrite a run";
  auto store = EventStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  EXPECT_EQ((*store)->read()->size(), 1u);

  auto other = temp_db("other");
  sqlite3* db = nullptr;
  sqlite3_open(other.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE t(x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  auto refused = EventStore::open(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().find("not a longhaul run store"), std::string::npos);
  EXPECT_FALSE(EventStore::open(temp_db("missing")).ok());
}

TEST(EventStore, IsWalWithFullSyncAndAppendOnly) {
  auto path = temp_db("pragmas");
  auto store = EventStore::create(path);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->append("a", nlohmann::json::object()).ok());
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "wal");
  sqlite3_finalize(s);
  EXPECT_NE(sqlite3_exec(db, "UPDATE events SET type = 'forged'", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(db, "DELETE FROM events", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ((*store)->read()->at(0).type, "a");
  EXPECT_EQ(*(*store)->integrity_check(), "ok");
}

TEST(EventStore, BlobsAreContentAddressed) {
  auto store = EventStore::create(temp_db("blobs"));
  ASSERT_TRUE(store.ok());
  std::string data("binary\0bytes", 12);
  auto h1 = (*store)->put_blob(data);
  auto h2 = (*store)->put_blob(data);
  ASSERT_TRUE(h1.ok() && h2.ok());
  EXPECT_EQ(*h1, *h2);
  EXPECT_EQ(h1->size(), 64u);
  EXPECT_EQ(*(*store)->get_blob(*h1), data);
  EXPECT_EQ(*(*store)->get_blob((*store)->put_blob("").value()), "");
  EXPECT_FALSE((*store)->get_blob("0000").ok());
}

TEST(EventStore, BatchCommitsTogether) {
  auto store = EventStore::create(temp_db("batch"));
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->begin_batch().ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*store)->append("e", {{"i", i}}).ok());
  ASSERT_TRUE((*store)->commit_batch().ok());
  EXPECT_EQ((*store)->read()->size(), 100u);
}

}  // namespace
}  // namespace longhaul
