#define _GNU_SOURCE
#include "CTimerKitShims.h"
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

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

#if defined(__linux__)
int ctk_timerfd_create(int kind) {
    return timerfd_create(ctk_clock_id(kind), TFD_CLOEXEC);
}

int ctk_timerfd_arm(int fd, int64_t deadline, int is_wall) {
    struct itimerspec spec = {0};
    int flags = 0;
    if (deadline > 0) {
        spec.it_value.tv_sec = (time_t)(deadline / 1000000000LL);
        spec.it_value.tv_nsec = (long)(deadline % 1000000000LL);
        flags = TFD_TIMER_ABSTIME | (is_wall ? TFD_TIMER_CANCEL_ON_SET : 0);
    }
    return timerfd_settime(fd, flags, &spec, NULL);
}

int ctk_timerfd_wait(int fd) {
    uint64_t expirations = 0;
    ssize_t n = read(fd, &expirations, sizeof expirations);
    if (n == (ssize_t)sizeof expirations) return 1;
    if (n < 0 && (errno == ECANCELED || errno == EINTR)) return 0;
    return -1;
}

void ctk_set_precise_timer_slack(void) { prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); }
#endif

void ctk_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}
