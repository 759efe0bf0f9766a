/* A function built with a frame pointer that blocks in glibc's syscall(), loaded through ctypes
 * by native_target.py for the --native tests (the test builds it: gcc -shared -fPIC -O1 -g
 * -fno-omit-frame-pointer -fno-optimize-sibling-calls).
 *
 * glibc's syscall() saves no register: blocked in it, the thread's syscall file gives its sp
 * and pc, and the unwind from them reaches spyglass_fp_block, whose CFA is rbp + 16. rbp is
 * not in the syscall file, so the unwind without a stop ends there, below every Python frame:
 * only a stop (all registers) takes the stack further. */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

__attribute__((noinline)) long spyglass_fp_block(int fd) {
    char byte = 0;
    long got = syscall(SYS_read, fd, &byte, 1);
    __asm__ volatile("" : : "r"(byte) : "memory"); /* no tail call: this frame stays */
    return got;
}
