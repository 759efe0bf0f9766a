// The /proc parsers behind the wait reasons, on text captured from a live Linux 6.x (threads
// of a Python 3.12 blocked in recvfrom, clock_nanosleep, read, pselect6, accept4, futex and
// epoll_wait; the net tables of the sockets it had open).
#include <gtest/gtest.h>

#include "spyglass/process/proc_waits.hpp"

namespace {

using namespace spyglass::process;

TEST(SyscallTable, NamesAndNumbersFromTheKernelsList) {
    EXPECT_EQ(syscall_name(0), "read");
    EXPECT_EQ(syscall_name(45), "recvfrom");
    EXPECT_EQ(syscall_name(202), "futex");
    EXPECT_EQ(syscall_name(230), "clock_nanosleep");
    EXPECT_EQ(syscall_name(232), "epoll_wait");
    EXPECT_EQ(syscall_name(270), "pselect6");
    EXPECT_EQ(syscall_name(288), "accept4");
    EXPECT_EQ(syscall_name(-1), "");
    EXPECT_EQ(syscall_name(100000), "");
    EXPECT_EQ(syscall_name(335), ""); // a gap in the numbering
    EXPECT_EQ(syscall_number("openat"), 257);
    EXPECT_EQ(syscall_number("no_such_call"), std::nullopt);
    EXPECT_EQ(syscall_number(""), std::nullopt);
}

TEST(SyscallTable, WhichArgumentSaysWhatACallWaitsOn) {
    EXPECT_EQ(syscall_args(0), SyscallArgs::fd);  // read
    EXPECT_EQ(syscall_args(45), SyscallArgs::fd); // recvfrom
    EXPECT_EQ(syscall_args(73), SyscallArgs::fd); // flock
    EXPECT_EQ(syscall_args(202), SyscallArgs::futex);
    EXPECT_EQ(syscall_args(7), SyscallArgs::poll);
    EXPECT_EQ(syscall_args(23), SyscallArgs::select);
    EXPECT_EQ(syscall_args(270), SyscallArgs::select);
    EXPECT_EQ(syscall_args(232), SyscallArgs::epoll);
    EXPECT_EQ(syscall_args(281), SyscallArgs::epoll);
    EXPECT_EQ(syscall_args(35), SyscallArgs::sleep);
    EXPECT_EQ(syscall_args(230), SyscallArgs::sleep);
    EXPECT_EQ(syscall_args(61), SyscallArgs::child);
    EXPECT_EQ(syscall_args(2), SyscallArgs::path0);
    EXPECT_EQ(syscall_args(257), SyscallArgs::path1);
    EXPECT_EQ(syscall_args(39), SyscallArgs::none); // getpid
    EXPECT_EQ(syscall_args(-1), SyscallArgs::none);
}

TEST(ParseSyscall, InASystemCall) {
    auto state = parse_syscall("45 0x4 0x7f0d08762060 0xa 0x0 0x0 0x0 0x7f0d08563a10 "
                               "0x7f0d08d28974\n");
    ASSERT_TRUE(state);
    EXPECT_EQ(state->where, SyscallState::Where::syscall);
    EXPECT_EQ(state->nr, 45);
    EXPECT_EQ(state->args[0], 4u);
    EXPECT_EQ(state->args[1], 0x7f0d08762060u);
    EXPECT_EQ(state->args[2], 0xau);
    EXPECT_EQ(state->args[5], 0u);

    auto futex = parse_syscall("202 0x7fa71ae56200 0x89 0x0 0x7fa70bffebf0 0x0 0xffffffff "
                               "0x7fa70bffeac0 0x7fa71a6a3f16\n");
    ASSERT_TRUE(futex);
    EXPECT_EQ(futex->nr, 202);
    EXPECT_EQ(futex->args[0], 0x7fa71ae56200u);
    EXPECT_EQ(futex->args[5], 0xffffffffu);
}

TEST(ParseSyscall, RunningAndOutsideASystemCall) {
    auto running = parse_syscall("running\n");
    ASSERT_TRUE(running);
    EXPECT_EQ(running->where, SyscallState::Where::running);
    auto user = parse_syscall("-1 0x7ffd2b1c3a40 0x55d0c0a1b2c3\n");
    ASSERT_TRUE(user);
    EXPECT_EQ(user->where, SyscallState::Where::user);
    EXPECT_EQ(user->nr, -1);
}

TEST(ParseSyscall, MalformedTextIsRefused) {
    EXPECT_FALSE(parse_syscall(""));
    EXPECT_FALSE(parse_syscall("banana"));
    EXPECT_FALSE(parse_syscall("-7 0x0 0x0"));
    EXPECT_FALSE(parse_syscall("45 0x4 0x7f"));             // arguments missing
    EXPECT_FALSE(parse_syscall("45 0x4 0xzz 0 0 0 0 0 0")); // not hexadecimal
}

TEST(ParseFdLink, EveryKindOfDescriptor) {
    FdLink socket = parse_fd_link("socket:[888610]");
    EXPECT_EQ(socket.type, FdType::socket);
    EXPECT_EQ(socket.inode, 888610u);
    FdLink pipe = parse_fd_link("pipe:[888613]");
    EXPECT_EQ(pipe.type, FdType::pipe);
    EXPECT_EQ(pipe.inode, 888613u);
    FdLink eventfd = parse_fd_link("anon_inode:[eventfd]");
    EXPECT_EQ(eventfd.type, FdType::anon);
    EXPECT_EQ(eventfd.name, "eventfd");
    FdLink inotify = parse_fd_link("anon_inode:inotify");
    EXPECT_EQ(inotify.type, FdType::anon);
    EXPECT_EQ(inotify.name, "inotify");
    FdLink file = parse_fd_link("/var/lib/app/data.db (deleted)");
    EXPECT_EQ(file.type, FdType::path);
    EXPECT_EQ(file.name, "/var/lib/app/data.db (deleted)");
    EXPECT_EQ(parse_fd_link("socket:[12x]").type, FdType::other);
    EXPECT_EQ(parse_fd_link("net:[4026531840]").type, FdType::other);
}

TEST(ParseNet, Ipv4TcpAndUdp) {
    constexpr const char* tcp =
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode\n"
        "   0: 0100007F:EB77 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0    "
        "    0 888609 1 000000007c71516d 100 0 0 10 0\n"
        "   2: 0100007F:EB77 0100007F:8C1A 01 00000000:00000000 00:00000000 00000000     0    "
        "    0 888611 1 000000004b532b37 20 0 0 10 -1\n"
        "   3: 0100007F:8C1A 0100007F:EB77 01 00000000:00000000 00:00000000 00000000     0    "
        "    0 888610 2 00000000c7820163 20 0 0 10 -1\n"
        "   4: 0100007F:8C1B 0100007F:EB77 06 00000000:00000000 03:00001770 00000000     0    "
        "    0 0 3 0000000000000000\n";
    SocketTable table;
    parse_net_inet(tcp, SocketProtocol::tcp, false, table);
    ASSERT_EQ(table.size(), 3u); // TIME_WAIT has no inode
    EXPECT_EQ(table[888609].local, "127.0.0.1:60279");
    EXPECT_EQ(table[888609].remote, "");
    EXPECT_TRUE(table[888609].listening);
    EXPECT_EQ(table[888610].local, "127.0.0.1:35866");
    EXPECT_EQ(table[888610].remote, "127.0.0.1:60279");
    EXPECT_EQ(table[888610].state, 1);
    EXPECT_FALSE(table[888610].listening);
    EXPECT_STREQ(tcp_state_name(table[888610].state), "ESTAB");
    EXPECT_STREQ(tcp_state_name(10), "LISTEN");

    constexpr const char* udp =
        "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
        "timeout inode ref pointer drops\n"
        " 3900: 0100007F:DE86 00000000:0000 07 00000000:00000000 00:00000000 00000000     0   "
        "     0 888612 2 0000000073229652 0\n";
    parse_net_inet(udp, SocketProtocol::udp, false, table);
    EXPECT_EQ(table[888612].protocol, SocketProtocol::udp);
    EXPECT_EQ(table[888612].local, "127.0.0.1:56966");
    EXPECT_EQ(table[888612].remote, "");
    EXPECT_FALSE(table[888612].listening);
}

TEST(ParseNet, Ipv6AndIpv4MappedAddresses) {
    constexpr const char* tcp6 =
        "  sl  local_address                         remote_address                        st "
        "tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000000000000:E6BF 00000000000000000000000000000000:0000 0A "
        "00000000:00000000 00:00000000 00000000     0        0 897304 1 00000000a3aafd06 100 0 "
        "0 10 0\n"
        "   3: 00000000000000000000000001000000:C036 00000000000000000000000001000000:C7C5 01 "
        "00000000:00000000 00:00000000 00000000     0        0 897302 2 00000000ffa581c0 20 0 "
        "0 10 -1\n"
        "   4: 0000000000000000FFFF00000100007F:E6BF 0000000000000000FFFF00000100007F:D94C 01 "
        "00000000:00000000 00:00000000 00000000     0        0 897306 1 0000000018ae492e 20 0 "
        "0 10 -1\n"
        "   5: 000080FE00000000FF2E0A02FE0E8C1A:01BB B80D0120000000000000000001000000:D431 01 "
        "00000000:00000000 00:00000000 00000000     0        0 897399 1 0000000018ae492e 20 0 "
        "0 10 -1\n";
    SocketTable table;
    parse_net_inet(tcp6, SocketProtocol::tcp, true, table);
    ASSERT_EQ(table.size(), 4u);
    EXPECT_EQ(table[897304].local, "[::]:59071");
    EXPECT_TRUE(table[897304].listening);
    EXPECT_EQ(table[897302].local, "[::1]:49206");
    EXPECT_EQ(table[897302].remote, "[::1]:51141");
    EXPECT_EQ(table[897306].local, "127.0.0.1:59071"); // v4-mapped: shown as IPv4
    EXPECT_EQ(table[897306].remote, "127.0.0.1:55628");
    EXPECT_EQ(table[897399].local, "[fe80::20a:2eff:1a8c:efe]:443");
    EXPECT_EQ(table[897399].remote, "[2001:db8::1]:54321");
}

TEST(ParseNet, UnixSockets) {
    constexpr const char* unix_text =
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "000000002b0c9076: 00000003 00000000 00000000 0001 03  1453\n"
        "0000000083108af8: 00000002 00000000 00010000 0001 01 897308 /tmp/spyglass-exp.sock\n"
        "000000003fcbd4d7: 00000003 00000000 00000000 0001 03 897309\n"
        "000000001c4b1bff: 00000003 00000000 00000000 0001 03 897310 /tmp/spyglass-exp.sock\n"
        "00000000deadbeef: 00000002 00000000 00010000 0001 01 897320 @/tmp/.X11-unix/X0\n";
    SocketTable table;
    parse_net_unix(unix_text, table);
    ASSERT_EQ(table.size(), 5u);
    EXPECT_EQ(table[897308].protocol, SocketProtocol::unix_);
    EXPECT_EQ(table[897308].local, "/tmp/spyglass-exp.sock");
    EXPECT_TRUE(table[897308].listening);
    EXPECT_EQ(table[897309].local, "");
    EXPECT_EQ(table[897309].state, 3);
    EXPECT_FALSE(table[897309].listening);
    EXPECT_EQ(table[897310].local, "/tmp/spyglass-exp.sock");
    EXPECT_EQ(table[897320].local, "@/tmp/.X11-unix/X0");
    EXPECT_EQ(table[1453].local, "");
}

TEST(ParseNet, GarbageRowsAreSkipped) {
    SocketTable table;
    parse_net_inet("   0: 0100007F EB77 0A\n   1: XYZ:0000 00000000:0000 0A 0 0 0 0 0 17\n",
                   SocketProtocol::tcp, false, table);
    parse_net_inet("   0: 0100007F:FFFFF 00000000:0000 0A 0 0 0 0 0 18\n", SocketProtocol::tcp,
                   false, table);
    parse_net_unix("0000: 00000002 00000000 zz 0001 01 19 /x\n", table);
    EXPECT_TRUE(table.empty());
}

TEST(ParseEpoll, TheDescriptorsOfAnEpollSet) {
    constexpr const char* fdinfo =
        "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n"
        "tfd:        4 events:       19 data:     559300000004  pos:0 ino:d9319 sdev:9\n"
        "tfd:       12 events:       19 data:     55930000000c  pos:0 ino:d931a sdev:9\n";
    EXPECT_EQ(parse_epoll_fdinfo(fdinfo), (std::vector<int>{4, 12}));
    EXPECT_TRUE(parse_epoll_fdinfo("pos:\t0\nflags:\t02\n").empty());
}

} // namespace
