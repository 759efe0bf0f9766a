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
#include <sys/sysmacros.h>
#include <unistd.h>

#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/delivery/output_file.hpp"
#include "spyglass/delivery/output_path.hpp"

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
    // Today's temporary names are `.NAME.spyglass-PID-RANDOM.tmp`.
    static bool is_temporary_of(const std::string& entry, const std::string& name) {
        std::string prefix = "." + name + ".spyglass-" + std::to_string(::getpid()) + "-";
        if (!entry.starts_with(prefix) || !entry.ends_with(".tmp")) return false;
        std::string random = entry.substr(prefix.size(), entry.size() - prefix.size() - 4);
        return random.size() == 12 &&
               random.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") ==
                   std::string::npos;
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
    auto out = delivery::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out) << out.error().message;
    ASSERT_EQ(entries().size(), 1u);
    EXPECT_TRUE(is_temporary_of(entries()[0], "p.txt")) << entries()[0];
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
        auto out = delivery::OutputFile::open(path("p.txt"));
        ASSERT_TRUE(out);
        std::fputs("half a new", *out->begin_write());
    } // never committed: an abandoned recording
    EXPECT_EQ(read(path("p.txt")), "old profile\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, FailedWriteSaysTheOldFileIsUnchanged) {
    write(path("p.txt"), "old profile\n");
    auto out = delivery::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out);
    std::fputs("half", *out->begin_write());
    auto result = out->finish(fail(Errc::io, "cannot write the profile: No space left on device"));
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().message, "cannot write the profile to " + path("p.txt") +
                                          ": No space left on device; " + path("p.txt") +
                                          " is unchanged");
    EXPECT_EQ(read(path("p.txt")), "old profile\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});

    auto fresh = delivery::OutputFile::open(path("new.txt"));
    ASSERT_TRUE(fresh);
    result = fresh->finish(fail(Errc::io, "cannot write the profile: Input/output error"));
    ASSERT_FALSE(result);
    EXPECT_THAT(result.error().message, HasSubstr("nothing was written to " + path("new.txt")));
    EXPECT_EQ(entries(), std::vector<std::string>{"p.txt"});
}

TEST_F(OutputFileTest, ReplacementKeepsTheOldPermissions) {
    write(path("p.txt"), "old\n");
    ::chmod(path("p.txt").c_str(), 0640);
    auto out = delivery::OutputFile::open(path("p.txt"));
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
    auto out = delivery::OutputFile::open(path("p.txt"));
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
        auto out = delivery::OutputFile::open(path(name));
        ASSERT_TRUE(out) << out.error().message;
        std::fputs("new\n", *out->begin_write());
        ASSERT_TRUE(out->commit());
        EXPECT_TRUE(fs::is_symlink(path(name)));
        EXPECT_EQ(read(path(name)), "new\n");
    }
    EXPECT_EQ(read(path("real/absent.txt")), "new\n");
}

TEST_F(OutputFileTest, GuessableTemporaryNamesNeitherBlockNorRedirect) {
    // Planted at the names earlier versions used (`.NAME.spyglass-PID.tmp`,
    // `.NAME.tmp-PID-N`): a file and a link to a file that must not appear.
    const std::string pid = std::to_string(::getpid());
    write(path(".p.txt.spyglass-" + pid + ".tmp"), "planted");
    for (int n = 0; n < 4; ++n)
        fs::create_symlink(path("victim"), path(".p.txt.tmp-" + pid + "-" + std::to_string(n)));
    std::vector<std::string> planted = entries();
    auto out = delivery::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("new\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    ASSERT_TRUE(
        delivery::write_file_atomically(path("q.txt"), [](std::FILE* stream) -> Result<void> {
            std::fputs("whole\n", stream);
            return {};
        }));
    EXPECT_EQ(read(path("p.txt")), "new\n");
    EXPECT_EQ(read(path("q.txt")), "whole\n");
    EXPECT_EQ(read(path(".p.txt.spyglass-" + pid + ".tmp")), "planted");
    EXPECT_FALSE(fs::exists(path("victim")));
    planted.push_back("p.txt");
    planted.push_back("q.txt");
    std::sort(planted.begin(), planted.end());
    EXPECT_EQ(entries(), planted);
}

TEST_F(OutputFileTest, TemporaryNamesDifferEachTime) {
    auto first = delivery::OutputFile::open(path("p.txt"));
    auto second = delivery::OutputFile::open(path("p.txt"));
    ASSERT_TRUE(first && second);
    std::vector<std::string> names = entries();
    ASSERT_EQ(names.size(), 2u);
    EXPECT_TRUE(is_temporary_of(names[0], "p.txt") && is_temporary_of(names[1], "p.txt"))
        << names[0] << " " << names[1];
}

TEST_F(OutputFileTest, WhatCannotBeWrittenIsSaidAtOpen) {
    auto directory = delivery::OutputFile::open(dir_);
    ASSERT_FALSE(directory);
    EXPECT_THAT(directory.error().message, HasSubstr("it is a directory"));
    auto missing = delivery::OutputFile::open(path("no/such/dir/p.svg"));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().message, "cannot write the output to " + path("no/such/dir/p.svg") +
                                           ": No such file or directory");
    auto full = delivery::OutputFile::open("/dev/full");
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().message,
              "cannot write the output to /dev/full: No space left on device");
    EXPECT_EQ(entries(), std::vector<std::string>{});
}

TEST_F(OutputFileTest, FifoNeedsAReader) {
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    auto alone = delivery::OutputFile::open(path("fifo"));
    ASSERT_FALSE(alone);
    EXPECT_THAT(alone.error().message, HasSubstr("no reader on FIFO " + path("fifo")));
    int reader = ::open(path("fifo").c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    auto out = delivery::OutputFile::open(path("fifo"));
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
    auto out = delivery::OutputFile::open("/dev/null");
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("x\n", *out->begin_write());
    EXPECT_TRUE(out->commit());
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(OutputFileTest, DescriptorPathWritesThatDescriptor) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    auto out = delivery::OutputFile::open("/dev/fd/" + std::to_string(fds[1]));
    ASSERT_TRUE(out) << out.error().message;
    std::fputs("through the pipe\n", *out->begin_write());
    ASSERT_TRUE(out->commit());
    ::close(fds[1]);
    char buffer[64] = {};
    EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 17);
    ::close(fds[0]);
}

// --- the one rule for every output path (output_path.hpp) ----------------------------------

using Kind = delivery::Destination::Kind;

class DestinationTest : public OutputFileTest {
  protected:
    static Result<delivery::Destination> classify(const std::string& p) {
        return delivery::Destination::classify(p, "the output");
    }
    // A directory like /tmp: mode 1777, owned by `owner`.
    std::string shared_directory(uid_t owner) {
        std::string shared = path("shared");
        fs::create_directory(shared);
        ::chmod(shared.c_str(), 01777);
        EXPECT_EQ(::chown(shared.c_str(), owner, owner), 0);
        return shared;
    }
    static void link_owned_by(const std::string& target, const std::string& link, uid_t owner) {
        fs::create_symlink(target, link);
        ASSERT_EQ(::lchown(link.c_str(), owner, owner), 0);
    }
    static constexpr uid_t kOther = 65534; // nobody
};

TEST_F(DestinationTest, EachKindOfPath) {
    write(path("old.txt"), "old\n");
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    auto standard = classify("-");
    ASSERT_TRUE(standard);
    EXPECT_EQ(standard->kind(), Kind::standard_output);
    auto stdout_path = classify("/dev/stdout");
    ASSERT_TRUE(stdout_path);
    EXPECT_EQ(stdout_path->kind(), Kind::descriptor);
    EXPECT_EQ(stdout_path->descriptor(), 1);
    auto fd_path = classify("/dev/fd/7");
    ASSERT_TRUE(fd_path);
    EXPECT_EQ(fd_path->kind(), Kind::descriptor);
    EXPECT_EQ(fd_path->descriptor(), 7);
    auto fresh = classify(path("new.txt"));
    ASSERT_TRUE(fresh) << fresh.error().message;
    EXPECT_EQ(fresh->kind(), Kind::replace);
    EXPECT_FALSE(fresh->exists());
    auto old = classify(path("old.txt"));
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_EQ(old->kind(), Kind::replace);
    EXPECT_TRUE(old->exists());
    auto fifo = classify(path("fifo"));
    ASSERT_TRUE(fifo) << fifo.error().message;
    EXPECT_EQ(fifo->kind(), Kind::in_place);
    auto null = classify("/dev/null");
    ASSERT_TRUE(null) << null.error().message;
    EXPECT_EQ(null->kind(), Kind::in_place);
    auto directory = classify(dir_);
    ASSERT_FALSE(directory);
    EXPECT_EQ(directory.error().message,
              "cannot write the output to " + dir_ + ": it is a directory");
    auto slash = classify(dir_ + "/");
    ASSERT_FALSE(slash);
    EXPECT_THAT(slash.error().message, HasSubstr("it is a directory"));
    if (::mknod(path("block").c_str(), S_IFBLK | 0600, ::makedev(7, 0)) == 0) {
        auto block = classify(path("block"));
        ASSERT_FALSE(block);
        EXPECT_THAT(block.error().message, HasSubstr("it is a block device"));
    }
}

TEST_F(DestinationTest, LinksAreFollowedToTheirLastTarget) {
    write(path("real.txt"), "old\n");
    fs::create_symlink("real.txt", path("one"));
    fs::create_symlink(path("one"), path("two"));
    fs::create_symlink("/proc/self/fd/2", path("err"));
    fs::create_symlink("two", path("loop"));
    ::unlink(path("two").c_str());
    fs::create_symlink("loop", path("two"));
    auto chain = classify(path("one"));
    ASSERT_TRUE(chain) << chain.error().message;
    EXPECT_EQ(chain->kind(), Kind::replace);
    EXPECT_EQ(chain->file(), dir_ + "/real.txt");
    auto descriptor = classify(path("err"));
    ASSERT_TRUE(descriptor) << descriptor.error().message;
    EXPECT_EQ(descriptor->kind(), Kind::descriptor);
    EXPECT_EQ(descriptor->descriptor(), 2);
    auto loop = classify(path("loop"));
    ASSERT_FALSE(loop);
    EXPECT_THAT(loop.error().message, HasSubstr("Too many levels of symbolic links"));
}

TEST_F(DestinationTest, TheKernelsRuleForLinksInStickyDirectories) {
    struct stat shared {};
    shared.st_mode = S_IFDIR | 01777;
    shared.st_uid = 0;
    EXPECT_TRUE(delivery::may_follow_link(shared, 0, 0));           // ours
    EXPECT_FALSE(delivery::may_follow_link(shared, kOther, 0));     // another user's
    EXPECT_TRUE(delivery::may_follow_link(shared, kOther, kOther)); // theirs, to them
    shared.st_uid = kOther;
    EXPECT_TRUE(delivery::may_follow_link(shared, kOther, 0)); // the directory owner's
    struct stat plain = shared;
    plain.st_uid = 0;
    plain.st_mode = S_IFDIR | 0777; // not sticky
    EXPECT_TRUE(delivery::may_follow_link(plain, kOther, 0));
    plain.st_mode = S_IFDIR | 01775; // not world-writable
    EXPECT_TRUE(delivery::may_follow_link(plain, kOther, 0));
}

TEST_F(DestinationTest, AnotherUsersLinkInAStickyDirectoryIsRefused) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a link to another user";
    write(path("secret"), "root only\n");
    std::string shared = shared_directory(0);
    link_owned_by(path("secret"), shared + "/prof.txt", kOther);
    link_owned_by(path("absent"), shared + "/dangling.txt", kOther);
    fs::create_symlink(path("secret"), shared + "/trusted.txt");
    for (const char* name : {"prof.txt", "dangling.txt"}) {
        std::string link = shared + "/" + name;
        auto refused = classify(link);
        ASSERT_FALSE(refused) << name;
        EXPECT_THAT(refused.error().message,
                    HasSubstr(link +
                              " is a symbolic link owned by nobody (uid 65534) in the "
                              "sticky world-writable directory " +
                              shared + ": not followed"));
        EXPECT_FALSE(delivery::OutputFile::open(link));
        EXPECT_FALSE(
            delivery::write_file_atomically(link, [](std::FILE*) -> Result<void> { return {}; }));
    }
    EXPECT_EQ(read(path("secret")), "root only\n");
    EXPECT_FALSE(fs::exists(path("absent")));
    // A link of ours there is followed, as before.
    auto trusted = classify(shared + "/trusted.txt");
    ASSERT_TRUE(trusted) << trusted.error().message;
    EXPECT_EQ(trusted->file(), path("secret"));
}

TEST_F(DestinationTest, TheDirectoryOwnersLinkIsFollowed) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a link to another user";
    std::string shared = shared_directory(kOther);
    link_owned_by(path("target.txt"), shared + "/theirs.txt", kOther);
    auto followed = classify(shared + "/theirs.txt");
    ASSERT_TRUE(followed) << followed.error().message;
    EXPECT_EQ(followed->file(), path("target.txt"));
}

TEST_F(DestinationTest, DevicesAndFifosAreWrittenInPlace) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a device node";
    ASSERT_EQ(::mknod(path("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)), 0);
    ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
    int reader = ::open(path("fifo").c_str(), O_RDONLY | O_NONBLOCK);
    ASSERT_GE(reader, 0);
    auto write_text = [](std::FILE* stream) -> Result<void> {
        std::fputs("a 1\n", stream);
        return {};
    };
    ASSERT_TRUE(delivery::write_file_atomically(path("null"), write_text));
    ASSERT_TRUE(delivery::write_file_atomically(path("fifo"), write_text));
    EXPECT_TRUE(fs::is_character_file(path("null")));
    EXPECT_TRUE(fs::is_fifo(path("fifo")));
    char buffer[16] = {};
    EXPECT_EQ(::read(reader, buffer, sizeof buffer), 4);
    EXPECT_STREQ(buffer, "a 1\n");
    ::close(reader);
    auto full = delivery::write_file_atomically("/dev/full", write_text);
    ASSERT_FALSE(full);
    EXPECT_EQ(full.error().message,
              "cannot write the output to /dev/full: No space left on device");
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
    EXPECT_EQ(entries(), (std::vector<std::string>{"fifo", "null"}));
}

} // namespace
