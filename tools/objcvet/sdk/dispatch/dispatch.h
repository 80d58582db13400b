// libdispatch: semaphores and time, as Delta uses them. Under ARC a
// dispatch object is an Objective-C object (OS_OBJECT_USE_OBJC).
#pragma once
#include <stdint.h>
typedef uint64_t dispatch_time_t;
#define DISPATCH_TIME_NOW (0ull)
#define DISPATCH_TIME_FOREVER (~0ull)
#define NSEC_PER_SEC 1000000000ull
@protocol OS_dispatch_semaphore
@end
typedef NSObject<OS_dispatch_semaphore> *dispatch_semaphore_t;
extern dispatch_semaphore_t dispatch_semaphore_create(long value);
extern long dispatch_semaphore_wait(dispatch_semaphore_t dsema, dispatch_time_t timeout);
extern long dispatch_semaphore_signal(dispatch_semaphore_t dsema);
extern dispatch_time_t dispatch_time(dispatch_time_t when, int64_t delta);
