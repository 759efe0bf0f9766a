// OutputFile: a profile goes under its real name only when complete; what it does with FIFOs,
// devices, symbolic links and descriptor paths (docs/reliability.md).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spyglass/cli/output_file.hpp"

namespace {

using namespace spyglass;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
  protected:
    void SetUp() override {
        char pattern[] = "/tmp/spyglass-output-file-XXXXXX";
        ASSERT_NE(::mkdtemp(pattern), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }
    std::string temporary(const std::string& name) const {
        return path("." + name + ".spyglass-" + std::to_string(::getpid()) + ".tmp");
    }
    static std::string read(const std::string& file) {
        std::ifstream in(file);
        std::stringstream text;
        text << in.rdbuf();
        return text.str();
    }
    static void write(const std::string& file, const std::string& text) {
        std::ofstream(file) << text;
    }
    std::vector<std::string> entries() const {
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dir_))
            names.push_back(entry.path().filename());
        std::sort(names.begin(), names.end());
        return names;
    }

    std::string dir_;
};

TEST_F(OutputFileTest, NewFileAppearsOnlyWhenCommitted) {
    auto out = cli::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_EQ(entries(),
              std::vector<std::string>{".p.txt.spyglass-" + std::to_string(::getpid()) + ".tmp"});
    auto stream = out->begin_write();
    ASSERT_TRUE(stream);
    std::fputs("a;b 1\n", *stream);
    EXPECT_FALSE(fs::exists(path("p.txt")));
    ASSERT_TRUE(out->finish({}));
    EXPECT_EQ(read(path("p.txt")), "a;b 1\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, OldFileIsUnchangedWithoutCommit) {
    write(path("p.txt"), "old profile\n");
    ::chmod(path("p.txt").c_str(), 0600);
    {
        auto out = cli::OutputFile::open(path("p.txt"));
        ASSERT_TRUE(out);
        std::fputs("half a new", *out->begin_write());
    } // never committed: an abandoned recording
    EXPECT_EQ(read(path("p.txt")), "old profile\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, FailedWriteSaysTheOldFileIsUnchanged) {
    write(path("p.txt"), "old profile\n");
    auto out = cli::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out);
    std::fputs("half", *out->begin_write());
    auto result = out->finish(fail(Errc::io, "cannot write the profile: No space left on device"));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().message, "cannot write the profile to " + path("p.txt") +
                                          ": No space left on device; " + path("p.txt") +
                                          " is unchanged");
    EXPECT_EQ(read(path("p.txt")), "old profile\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});

    auto fresh = cli::OutputFile::open(path("new.txt"));
    ASSERT_TRUE(fresh);
    result = fresh->finish(fail(Errc::io, "cannot write the profile: Input/output error"));
    ASSERT_FALSE(result);
    EXPECT_THAT(result.error().message, HasSubstr("nothing was written to " + path("new.txt")));
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, ReplacementKeepsTheOldPermissions) {
    write(path("p.txt"), "old\n");
    ::chmod(path("p.txt").c_str(), 0640);
    auto out = cli::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out);
    std::fputs("new\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    struct stat info {};
    ASSERT_EQ(::stat(path("p.txt").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0640u);
    EXPECT_EQ(read(path("p.txt")), "new\n");
}

TEST_F(OutputFileTest, NewFileHonoursTheUmask) {
    mode_t previous = ::umask(027);
    auto out = cli::OutputFile::open(path("p.txt"));
    ::umask(previous);
    ASSERT_TRUE(out);
    std::fputs("x\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    struct stat info {};
    ASSERT_EQ(::stat(path("p.txt").c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 07777, 0640u);
}

TEST_F(OutputFileTest, SymbolicLinkStaysAndItsTargetIsReplaced) {
    fs::create_directory(path("real"));
    write(path("real/p.txt"), "old\n");
    fs::create_symlink("real/p.txt", path("link.txt"));
    fs::create_symlink("real/absent.txt", path("dangling.txt"));
    for (const char* name : {"link.txt", "dangling.txt"}) {
        auto out = cli::OutputFile::open(path(name));
        ASSERT_TRUE(out) << out.error().message;
        std::fputs("new\n", *out->begin_write());
        ASSERT_TRUE(out->commit());
        EXPECT_TRUE(fs::is_symlink(path(name)));
        EXPECT_EQ(read(path(name)), "new\n");
    }
    EXPECT_EQ(read(path("real/absent.txt")), "new\n");
}

TEST_F(OutputFileTest, StaleTemporaryWithOurPidIsReplaced) {
    write(temporary("p.txt"), "left by a killed spyglass");
    auto out = cli::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("new\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, WhatCannotBeWrittenIsSaidAtOpen) {
    auto directory = cli::OutputFile::open(dir_);
    ASSERT_FALSE(directory);
    EXPECT_THAT(directory.error().message, HasSubstr("it is a directory"));
    auto missing = cli::OutputFile::open(path("no/such/dir/p.svg"));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "cannot write the output to " + path("no/such/dir/p.svg") +
                                           ": No such file or directory");
    auto full = cli::OutputFile::open("/dev/full");
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().message,
              "cannot write the output to /dev/full: No space left on device");
    EXPECT_EQ(entries(), std::vector<std::string>{});
}

TEST_F(OutputFileTest, FifoNeedsAReader) {
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    auto alone = cli::OutputFile::open(path("fifo"));
    ASSERT_FALSE(alone);
    EXPECT_THAT(alone.error().message, HasSubstr("no reader on FIFO " + path("fifo")));
    int reader = ::open(path("fifo").c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    auto out = cli::OutputFile::open(path("fifo"));
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("a 1\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    char buffer[16] = {};
    EXPECT_EQ(::read(reader, buffer, sizeof buffer), 4);
    EXPECT_STREQ(buffer, "a 1\n");
    ::close(reader);
    EXPECT_EQ(entries(), std::vector<std::string>{"fifo"});
}

TEST_F(OutputFileTest, DevNullIsWrittenDirectly) {
    auto out = cli::OutputFile::open("/dev/null");
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("x\n", *out->begin_write());
    EXPECT_TRUE(out->commit());
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(OutputFileTest, DescriptorPathWritesThatDescriptor) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    auto out = cli::OutputFile::open("/dev/fd/" + std::to_string(fds[1]));
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("through the pipe\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    ::close(fds[1]);
    char buffer[64] = {};
    EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 17);
    ::close(fds[0]);
}

} // namespace
