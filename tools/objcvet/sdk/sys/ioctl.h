#pragma once
#include <sys/types.h>
#include <sys/sockio.h>
int ioctl(int fildes, unsigned long request, ...);
