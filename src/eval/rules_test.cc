#include "eval/rules.h"

#include <gtest/gtest.h>

namespace longhaul {
namespace {

TEST(Rules, PlainPathsCannotLeaveTheirFolder) {
  for (const char* p : {"a", "a.cc", "src/a.cc", "a/b/c", "..a", "a..b/c"}) EXPECT_TRUE(plain_path(p)) << p;
  for (const char* p : {"", "/etc/passwd", "../a", "a/../b", "a/..", "./a", "a/./b", "a//b", "a/", "a\\b", ".."})
    EXPECT_FALSE(plain_path(p)) << p;
  EXPECT_FALSE(plain_path(std::string("a\0/../b", 7)));
}

TEST(Rules, OnlyEditableFilesAreEditable) {
  Task task;
  task.editable = {"*.cc", "src/*"};
  task.harness = {"harness.cc", "src/fixed.h"};
  for (const char* p : {"gemm.cc", "src/a.h"}) EXPECT_TRUE(editable_path(task, p)) << p;
  for (const char* p : {"harness.cc", "src/fixed.h", "task.toml", "notes.txt", "../x.cc", "/tmp/x.cc", "src/../x.cc", "./gemm.cc"})
    EXPECT_FALSE(editable_path(task, p)) << p;
  task.editable = {"*"};
  EXPECT_FALSE(editable_path(task, "task.toml")) << "the task's own file, whatever the globs say";
}

}  // namespace
}  // namespace longhaul
