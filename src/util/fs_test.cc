#include "util/fs.h"

#include <gtest/gtest.h>

namespace longhaul {

TEST(Glob, SegmentsAndDoubleStar) {
  EXPECT_TRUE(glob_match("*.cc", "gemm.cc"));
  EXPECT_FALSE(glob_match("*.cc", "src/gemm.cc"));
  EXPECT_TRUE(glob_match("**/*.cc", "src/gemm.cc"));
  EXPECT_TRUE(glob_match("**/*.cc", "gemm.cc"));
  EXPECT_TRUE(glob_match("src/**", "src/a/b.h"));
  EXPECT_TRUE(glob_match("k?.h", "k1.h"));
  EXPECT_FALSE(glob_match("k?.h", "k/.h"));
  EXPECT_FALSE(glob_match("gemm.cc", "gemm.cpp"));
}

TEST(Files, WriteReadList) {
  auto dir = std::filesystem::temp_directory_path() / ("lh_fs_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_file(dir / "b/x.txt", "hello").ok());
  ASSERT_TRUE(write_file(dir / "a.txt", "").ok());
  EXPECT_EQ(*read_file(dir / "b/x.txt"), "hello");
  auto files = list_files(dir);
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{"a.txt", "b/x.txt"}));
  EXPECT_FALSE(read_file(dir / "missing").ok());
  std::filesystem::remove_all(dir);
}

TEST(Files, ListNamesALinkedFileByTheLink) {
  auto dir = std::filesystem::temp_directory_path() / ("lh_fs_link_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(write_file(dir / "elsewhere/real.cu", "x").ok());
  std::filesystem::create_directories(dir / "task/k");
  std::filesystem::create_symlink("../../elsewhere/real.cu", dir / "task/k/linked.cu");
  auto files = list_files(dir / "task");
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::vector<std::string>{"k/linked.cu"}));
  std::filesystem::remove_all(dir);
}

}  // namespace longhaul
