#pragma once
#include <stdint.h>
typedef char *caddr_t;
typedef uint32_t u_int32_t;
typedef uint8_t u_int8_t;
typedef unsigned long u_long;
