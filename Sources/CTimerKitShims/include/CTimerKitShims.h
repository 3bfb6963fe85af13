#ifndef C_TIMERKIT_SHIMS_H
#define C_TIMERKIT_SHIMS_H

#include <stdint.h>

/// Reads one of the clocks TimerKit supports, in nanoseconds since the clock's origin.
/// kind: 0 continuous (counts sleep), 1 suspending (stops in sleep), 2 wall (Unix epoch).
int64_t ctk_clock_now(int kind);

/// A number that identifies the calling thread for as long as it lives (the kernel's thread id on
/// Linux, `pthread_threadid_np` on Apple platforms).
uint64_t ctk_current_thread_id(void);

/// A small number of the calling thread's own, given on its first call from a process-wide
/// counter (0, 1, 2, …) and the same ever after: which shard of an engine the thread uses.
uint32_t ctk_thread_slot(void);

/// Names the calling thread as the system's tools show it (at most 15 bytes are kept on Linux).
/// Set from inside the thread itself: a new Linux thread otherwise keeps the name of the thread that
/// created it.
void ctk_set_current_thread_name(const char *name);

/// Atomically replaces `*value` with `desired` if it equals `expected` (sequentially consistent);
/// returns whether it did.
_Bool ctk_compare_exchange_i32(int32_t *value, int32_t expected, int32_t desired);
/// Atomically reads `*value` (sequentially consistent).
int32_t ctk_load_i32(const int32_t *value);
/// Atomically writes `*value` (sequentially consistent).
void ctk_store_i32(int32_t *value, int32_t desired);

/// Sleeps until the absolute instant `deadline` (ns on the clock of the given kind), with the
/// thread's timer slack at 1 ns on Linux: the OS floor that tests and benchmarks compare against.
void ctk_sleep_until(int kind, int64_t deadline);

/// Tells the CPU that the caller is in a spin-wait loop (`pause` on x86, `yield` on ARM): saves
/// power and leaves the core's resources to its sibling hyperthread.
void ctk_cpu_relax(void);

#if defined(__linux__)
/// Creates a non-blocking-free (blocking) close-on-exec timerfd on the given clock kind; -1 on error.
int ctk_timerfd_create(int kind);
/// Arms fd to expire at the absolute time `deadline` (ns on its clock); 0 disarms.
/// For the wall clock, the timer also wakes when the system clock is set.
int ctk_timerfd_arm(int fd, int64_t deadline, int is_wall);
/// Blocks until fd expires. Returns 1 when it expired, 0 when woken early by a clock change or a
/// signal (the caller re-reads the clock), -1 on any other error (errno tells).
int ctk_timerfd_wait(int fd);
/// Sets this thread's timer slack to 1 ns (the kernel's default is 50 µs) so that wake-ups are as
/// precise as the hardware allows.
void ctk_set_precise_timer_slack(void);
#endif

#endif
