#ifndef C_BENCH_SHIMS_H
#define C_BENCH_SHIMS_H

#include <stdint.h>

/// CLOCK_MONOTONIC in nanoseconds (the clock of DispatchTime, NIODeadline and Foundation's run loop).
int64_t cbench_now_monotonic(void);
/// CLOCK_BOOTTIME in nanoseconds (TimerKit's continuous clock on Linux).
int64_t cbench_now_boottime(void);
/// Sleeps until an absolute CLOCK_MONOTONIC deadline with clock_nanosleep(TIMER_ABSTIME), resuming
/// after signals. Returns 0, or an errno value.
int cbench_sleep_until_monotonic(int64_t deadline);
/// Sets the calling thread's timer slack (prctl(PR_SET_TIMERSLACK)); the kernel default is 50 µs.
void cbench_set_timer_slack(unsigned long nanoseconds);
/// Bytes in use by malloc in every arena, mmapped chunks included: the sum over arenas of
/// mallinfo2's uordblks + hblkhd, read from malloc_info(3) (mallinfo2 itself sees the main arena
/// only, and other threads allocate in arenas of their own). 0 when it cannot be read.
uint64_t cbench_heap_in_use(void);
/// mallinfo2().uordblks + mallinfo2().hblkhd: the main arena's bytes in use plus mmapped chunks.
uint64_t cbench_heap_main_arena(void);
/// mallinfo2().uordblks alone.
uint64_t cbench_heap_uordblks(void);
/// getrusage(RUSAGE_SELF) user + system CPU time of the whole process, in nanoseconds.
int64_t cbench_process_cpu_ns(void);
/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), in nanoseconds.
int64_t cbench_thread_cpu_ns(void);
/// Sum of voluntary_ctxt_switches over every thread of the process but the main one
/// (/proc/self/task/*/status): each time a thread blocks, which is the tail of each wake-up.
int64_t cbench_voluntary_switches_other_threads(void);
/// The number of threads of the process.
int cbench_thread_count(void);

#endif
