#define _GNU_SOURCE
#include "CTimerKitShims.h"
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#if defined(__APPLE__)
#include <fcntl.h>
#include <mach/mach_time.h>
#include <sys/event.h>
#endif

#if defined(__linux__)
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#endif

static uint32_t ctk_next_thread_slot = 0;
static _Thread_local uint32_t ctk_thread_slot_plus_one = 0;

uint32_t ctk_thread_slot(void) {
    uint32_t slot = ctk_thread_slot_plus_one;
    if (slot == 0) {
        slot = __atomic_fetch_add(&ctk_next_thread_slot, 1, __ATOMIC_RELAXED) + 1;
        ctk_thread_slot_plus_one = slot;
    }
    return slot - 1;
}

uint64_t ctk_current_thread_id(void) {
#if defined(__APPLE__)
    uint64_t id = 0;
    pthread_threadid_np(NULL, &id);
    return id;
#else
    return (uint64_t)syscall(SYS_gettid);
#endif
}

void ctk_set_current_thread_name(const char *name) {
#if defined(__APPLE__)
    pthread_setname_np(name);
#else
    prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
#endif
}

_Bool ctk_compare_exchange_i32(int32_t *value, int32_t expected, int32_t desired) {
    return __atomic_compare_exchange_n(value, &expected, desired, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int32_t ctk_load_i32(const int32_t *value) { return __atomic_load_n(value, __ATOMIC_SEQ_CST); }

void ctk_store_i32(int32_t *value, int32_t desired) { __atomic_store_n(value, desired, __ATOMIC_SEQ_CST); }

#if defined(__APPLE__)
static clockid_t ctk_clock_id(int kind) {
    switch (kind) {
    case 0: return CLOCK_MONOTONIC_RAW;  /* mach_continuous_time: counts sleep */
    case 1: return CLOCK_UPTIME_RAW;     /* mach_absolute_time: stops in sleep */
    default: return CLOCK_REALTIME;
    }
}
int64_t ctk_clock_now(int kind) { return (int64_t)clock_gettime_nsec_np(ctk_clock_id(kind)); }
#else
static clockid_t ctk_clock_id(int kind) {
    switch (kind) {
    case 0: return CLOCK_BOOTTIME;
    case 1: return CLOCK_MONOTONIC;
    default: return CLOCK_REALTIME;
    }
}
int64_t ctk_clock_now(int kind) {
    struct timespec ts;
    clock_gettime(ctk_clock_id(kind), &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}
#endif

void ctk_sleep_until(int kind, int64_t deadline) {
#if defined(__linux__)
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    struct timespec ts = { (time_t)(deadline / 1000000000LL), (long)(deadline % 1000000000LL) };
    while (clock_nanosleep(ctk_clock_id(kind), TIMER_ABSTIME, &ts, NULL) == EINTR) {}
#else
    int64_t now = ctk_clock_now(kind);
    if (deadline > now) {
        int64_t delay = deadline - now;
        struct timespec ts = { (time_t)(delay / 1000000000LL), (long)(delay % 1000000000LL) };
        nanosleep(&ts, NULL);
    }
#endif
}

/* ---- The kernel timer behind an engine's driver thread --------------------------------------- */

uint64_t ctk_mach_ticks_from_nanoseconds(uint64_t nanoseconds, uint32_t numer, uint32_t denom) {
    /* ticks = ceil(ns * denom / numer), without 128-bit arithmetic (watchOS's arm64_32 has none):
       ns = q * numer + r, so ns * denom / numer = q * denom + r * denom / numer, and r * denom fits
       in 64 bits because both factors are below 2^32. */
    if (numer == 0 || denom == 0) return UINT64_MAX;
    uint64_t q = nanoseconds / numer, r = nanoseconds % numer;
    if (q > (uint64_t)INT64_MAX / denom) return (uint64_t)INT64_MAX;
    uint64_t whole = q * denom;
    uint64_t part = (r * denom + numer - 1) / numer;
    if (whole > (uint64_t)INT64_MAX - part) return (uint64_t)INT64_MAX;
    return whole + part;
}

uint64_t ctk_nanoseconds_from_mach_ticks(uint64_t ticks, uint32_t numer, uint32_t denom) {
    if (numer == 0 || denom == 0) return UINT64_MAX;
    uint64_t q = ticks / denom, r = ticks % denom;
    if (q > UINT64_MAX / numer) return UINT64_MAX;
    return q * numer + (r * numer) / denom;
}

ctk_kevent_timer ctk_kevent_timer_for(int kind, int64_t deadline, uint32_t numer, uint32_t denom) {
    ctk_kevent_timer timer = {0, 0};
    timer.fflags = CTK_NOTE_MACHTIME | CTK_NOTE_ABSOLUTE | CTK_NOTE_CRITICAL;
    if (kind == 0) timer.fflags |= CTK_NOTE_MACH_CONTINUOUS_TIME;
    uint64_t ticks = ctk_mach_ticks_from_nanoseconds(deadline > 0 ? (uint64_t)deadline : 0, numer, denom);
    /* An absolute deadline of 0 ticks would be "now"; the driver never asks for one, but 1 is as early. */
    timer.data = ticks == 0 ? 1 : (int64_t)ticks;
    return timer;
}

#if defined(__linux__)

int ctk_kernel_timer_create(int kind) {
    return timerfd_create(ctk_clock_id(kind), TFD_CLOEXEC);
}

int ctk_kernel_timer_arm(int timer, int kind, int64_t deadline) {
    struct itimerspec spec = {0};
    int flags = 0;
    if (deadline > 0) {
        spec.it_value.tv_sec = (time_t)(deadline / 1000000000LL);
        spec.it_value.tv_nsec = (long)(deadline % 1000000000LL);
        flags = TFD_TIMER_ABSTIME | (kind == 2 ? TFD_TIMER_CANCEL_ON_SET : 0);
    }
    return timerfd_settime(timer, flags, &spec, NULL);
}

int ctk_kernel_timer_wait(int timer) {
    uint64_t expirations = 0;
    ssize_t n = read(timer, &expirations, sizeof expirations);
    if (n == (ssize_t)sizeof expirations) return 1;
    if (n < 0 && (errno == ECANCELED || errno == EINTR)) return 0;
    return -1;
}

void ctk_set_precise_timer_slack(void) { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }

#elif defined(__APPLE__)

/* The constants above are Apple's; the compiler checks them against <sys/event.h>. */
_Static_assert(CTK_NOTE_ABSOLUTE == NOTE_ABSOLUTE, "NOTE_ABSOLUTE");
_Static_assert(CTK_NOTE_CRITICAL == NOTE_CRITICAL, "NOTE_CRITICAL");
_Static_assert(CTK_NOTE_MACH_CONTINUOUS_TIME == NOTE_MACH_CONTINUOUS_TIME, "NOTE_MACH_CONTINUOUS_TIME");
_Static_assert(CTK_NOTE_MACHTIME == NOTE_MACHTIME, "NOTE_MACHTIME");

/* The one timer of an engine's kqueue. */
static const uint64_t ctk_timer_ident = 1;

int ctk_kernel_timer_create(int kind) {
    if (kind != 0 && kind != 1) {
        errno = EINVAL; /* the wall clock has no absolute kernel timer that follows clock changes */
        return -1;
    }
    int queue = kqueue();
    if (queue >= 0) fcntl(queue, F_SETFD, FD_CLOEXEC);
    return queue;
}

int ctk_kernel_timer_arm(int timer, int kind, int64_t deadline) {
    struct kevent64_s change;
    if (deadline <= 0) {
        EV_SET64(&change, ctk_timer_ident, EVFILT_TIMER, EV_DELETE, 0, 0, 0, 0, 0);
        int result = kevent64(timer, &change, 1, NULL, 0, 0, NULL);
        return (result < 0 && errno == ENOENT) ? 0 : result;
    }
    static mach_timebase_info_data_t timebase;
    if (timebase.denom == 0) mach_timebase_info(&timebase); /* idempotent: a race writes the same values */
    ctk_kevent_timer spec = ctk_kevent_timer_for(kind, deadline, timebase.numer, timebase.denom);
    /* Added again each time: that replaces the deadline of the timer, armed or fired. Its data is
       64-bit in kevent64 (kevent's intptr_t is 32-bit on watchOS, 178 s of ticks). */
    EV_SET64(&change, ctk_timer_ident, EVFILT_TIMER, EV_ADD | EV_ENABLE | EV_ONESHOT, spec.fflags, spec.data, 0, 0, 0);
    return kevent64(timer, &change, 1, NULL, 0, 0, NULL);
}

int ctk_kernel_timer_wait(int timer) {
    struct kevent64_s event;
    int n = kevent64(timer, NULL, 0, &event, 1, 0, NULL);
    if (n == 1 && (event.flags & EV_ERROR)) {
        errno = (int)event.data;
        return -1;
    }
    if (n == 1) return 1;
    if (n == 0 || (n < 0 && errno == EINTR)) return 0;
    return -1;
}

void ctk_set_precise_timer_slack(void) { /* the timer itself asks for no coalescing (NOTE_CRITICAL) */ }

#endif

void ctk_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}
