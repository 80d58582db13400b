// sys/sockio.h: the two requests Delta makes, with their numbers.
#pragma once
#include <sys/types.h>
#define IOC_INOUT 0xc0000000UL
#define IOCPARM_MASK 0x1fff
#define _IOC(inout, group, num, len) ((unsigned long)((inout) | (((len) & IOCPARM_MASK) << 16) | ((group) << 8) | (num)))
#define _IOWR(g, n, t) _IOC(IOC_INOUT, (g), (n), sizeof(t))
struct ifreq;
struct ifmediareq;
#define SIOCGIFMEDIA _IOWR('i', 56, struct ifmediareq)
#define SIOCGIFFUNCTIONALTYPE _IOWR('i', 173, struct ifreq)
