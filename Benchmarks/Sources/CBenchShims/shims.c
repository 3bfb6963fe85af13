#define _GNU_SOURCE
#include "CBenchShims.h"
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static int64_t now_on(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

int64_t cbench_now_monotonic(void) { return now_on(CLOCK_MONOTONIC); }
int64_t cbench_now_boottime(void) { return now_on(CLOCK_BOOTTIME); }

int cbench_sleep_until_monotonic(int64_t deadline) {
    struct timespec ts = {.tv_sec = (time_t)(deadline / 1000000000LL), .tv_nsec = (long)(deadline % 1000000000LL)};
    int rc;
    do {
        rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    } while (rc == EINTR);
    return rc;
}

void cbench_set_timer_slack(unsigned long nanoseconds) { prctl(PR_SET_TIMERSLACK, nanoseconds, 0UL, 0UL, 0UL); }

uint64_t cbench_heap_main_arena(void) {
    struct mallinfo2 info = mallinfo2();
    return (uint64_t)info.uordblks + (uint64_t)info.hblkhd;
}

uint64_t cbench_heap_in_use(void) {
    char *text = NULL;
    size_t length = 0;
    FILE *stream = open_memstream(&text, &length);
    if (!stream) return 0;
    malloc_info(0, stream);
    fclose(stream);
    /* The totals over every arena follow the last per-arena section. */
    char *totals = text;
    for (char *found = strstr(text, "</heap>"); found; found = strstr(found + 1, "</heap>")) totals = found;
    unsigned long long fast = 0, rest = 0, mmapped = 0, system = 0, count = 0;
    char *at;
    int ok = 1;
    ok &= (at = strstr(totals, "<total type=\"fast\"")) && sscanf(at, "<total type=\"fast\" count=\"%llu\" size=\"%llu\"", &count, &fast) == 2;
    ok &= (at = strstr(totals, "<total type=\"rest\"")) && sscanf(at, "<total type=\"rest\" count=\"%llu\" size=\"%llu\"", &count, &rest) == 2;
    ok &= (at = strstr(totals, "<total type=\"mmap\"")) && sscanf(at, "<total type=\"mmap\" count=\"%llu\" size=\"%llu\"", &count, &mmapped) == 2;
    ok &= (at = strstr(totals, "<system type=\"current\"")) && sscanf(at, "<system type=\"current\" size=\"%llu\"", &system) == 1;
    free(text);
    return ok ? (uint64_t)(system - fast - rest + mmapped) : 0;
}

uint64_t cbench_heap_uordblks(void) { return (uint64_t)mallinfo2().uordblks; }

int64_t cbench_process_cpu_ns(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return ((int64_t)usage.ru_utime.tv_sec + (int64_t)usage.ru_stime.tv_sec) * 1000000000LL +
           ((int64_t)usage.ru_utime.tv_usec + (int64_t)usage.ru_stime.tv_usec) * 1000LL;
}

int64_t cbench_thread_cpu_ns(void) { return now_on(CLOCK_THREAD_CPUTIME_ID); }

int64_t cbench_voluntary_switches_other_threads(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    pid_t main_tid = getpid();
    int64_t total = 0;
    struct dirent *entry;
    char path[64], line[256];
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        if (atoi(entry->d_name) == main_tid) continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", entry->d_name);
        FILE *file = fopen(path, "r");
        if (!file) continue;  // the thread ended meanwhile
        while (fgets(line, sizeof line, file)) {
            if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0) {
                total += atoll(line + 24);
                break;
            }
        }
        fclose(file);
    }
    closedir(dir);
    return total;
}

int cbench_thread_count(void) {
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    int count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') count++;
    }
    closedir(dir);
    return count;
}
