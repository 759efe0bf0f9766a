/* A function built with a frame pointer that blocks in glibc's syscall(), loaded through ctypes
 * by native_target.py for the --native tests (the test builds it: gcc -shared -fPIC -O1 -g
 * -fno-omit-frame-pointer -fno-optimize-sibling-calls).
 *
 * glibc's syscall() saves no register: blocked in it, the thread's syscall file gives its sp
 * and pc, and the unwind from them reaches spyglass_fp_block, whose CFA is rbp + 16. rbp is
 * not in the syscall file. spyglass looks for it on the stack (the saved-rbp and return-address
 * pair at the frame's top, searched 4 KiB up from its stack pointer); this frame is 8 KiB of
 * zeros first, so the search fails, the unwind without a stop ends there, below every Python
 * frame, and only a stop (all registers) takes the stack further. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) long spyglass_fp_block(int fd) {
    char byte = 0;
    char zeros[8192];
    __builtin_memset(zeros, 0, sizeof zeros);
    __asm__ volatile("" : : "r"(zeros) : "memory");
    long got = syscall(SYS_read, fd, &byte, 1);
    __asm__ volatile("" : : "r"(byte), "r"(zeros) : "memory"); /* no tail call: this frame stays */
    return got;
}
