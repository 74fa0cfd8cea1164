/**
 * The C source of the clock-skew shim: an LD_PRELOAD library that shifts CLOCK_REALTIME (and
 * gettimeofday, time) of the process it is loaded into by the milliseconds written in the file
 * named by $SKEW_FILE, re-read at most every 20 ms so a test can jump the clock at run time.
 * libfaketime cannot do this for Debian's jemalloc-linked redis-server (it recurses into malloc
 * while starting), so the shim uses raw system calls only and allocates nothing.
 * Kept as a string so that it ships inside the built package.
 */
export const skewClockSource = String.raw`#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long skew_ns;
static long long next_read_ns = -1;

static long long read_ns(clockid_t id) {
  struct timespec ts;
  syscall(SYS_clock_gettime, id, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void reload(void) {
  long long mono = read_ns(CLOCK_MONOTONIC);
  if (mono < next_read_ns) return;
  next_read_ns = mono + 20000000LL;
  const char *path = getenv("SKEW_FILE");
  if (path == NULL) return;
  int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) return;
  char text[32];
  long n = syscall(SYS_read, fd, text, sizeof text - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return;
  text[n] = '\0';
  skew_ns = strtoll(text, NULL, 10) * 1000000LL;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long result = syscall(SYS_clock_gettime, id, ts);
  if (result != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)) return (int)result;
  reload();
  long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + skew_ns;
  ts->tv_sec = ns / 1000000000LL;
  ts->tv_nsec = ns % 1000000000LL;
  return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
  struct timespec ts;
  (void)tz;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  if (tv != NULL) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != NULL) *out = ts.tv_sec;
  return ts.tv_sec;
}
`;
