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

/// The kernel timer an engine's driver thread waits on, with an absolute deadline on the engine's
/// own clock: on Linux a `timerfd` (`CLOCK_BOOTTIME`, `CLOCK_MONOTONIC`, or `CLOCK_REALTIME` armed
/// with `TFD_TIMER_CANCEL_ON_SET`); on Apple platforms a kqueue holding one `EVFILT_TIMER` on Mach
/// time (`mach_continuous_time` for the continuous clock, `mach_absolute_time` for the suspending
/// one; the wall clock has none and is refused with EINVAL). A file descriptor; -1 on error.
int ctk_kernel_timer_create(int kind);
/// Arms the timer to expire at the absolute instant `deadline` (ns on the clock of `kind`, the kind
/// it was created for); a deadline of 0 or less disarms it. Safe from any thread while another
/// waits: the new deadline takes effect at once. 0 on success, -1 on error (errno tells).
int ctk_kernel_timer_arm(int timer, int kind, int64_t deadline);
/// Blocks until the timer expires. Returns 1 when it expired, 0 when woken early by a clock change
/// or a signal (the caller re-reads the clock), -1 on any other error (errno tells).
int ctk_kernel_timer_wait(int timer);
/// Sets this thread's timer slack to 1 ns on Linux (the kernel's default is 50 µs), so that
/// wake-ups are as precise as the hardware allows. Apple platforms: nothing to do (the kqueue timer
/// asks for no coalescing itself).
void ctk_set_precise_timer_slack(void);

/// `EVFILT_TIMER` flags, Apple's values (checked against `<sys/event.h>` where it exists), so that
/// the kqueue timer's arithmetic is compiled and tested on every platform.
#define CTK_NOTE_ABSOLUTE 0x00000008u
#define CTK_NOTE_CRITICAL 0x00000020u
#define CTK_NOTE_MACH_CONTINUOUS_TIME 0x00000080u
#define CTK_NOTE_MACHTIME 0x00000100u

/// What a kqueue timer is armed with: its flags and its absolute deadline in Mach ticks.
typedef struct {
    uint32_t fflags;
    int64_t data;
} ctk_kevent_timer;

/// The `EVFILT_TIMER` that expires at `deadline` (ns) on the clock of `kind` (0 continuous:
/// `NOTE_MACH_CONTINUOUS_TIME`, which counts sleep; 1 suspending), for a Mach timebase of
/// `numer`/`denom` (ns = ticks × numer ÷ denom): absolute, in Mach ticks rounded up, so never before
/// the deadline, and without coalescing.
ctk_kevent_timer ctk_kevent_timer_for(int kind, int64_t deadline, uint32_t numer, uint32_t denom);
/// Mach ticks for `nanoseconds`, rounded up (the first tick at or after it); saturates at INT64_MAX.
uint64_t ctk_mach_ticks_from_nanoseconds(uint64_t nanoseconds, uint32_t numer, uint32_t denom);
/// Nanoseconds for Mach `ticks`, rounded down, as the system's clocks read them.
uint64_t ctk_nanoseconds_from_mach_ticks(uint64_t ticks, uint32_t numer, uint32_t denom);


#endif
