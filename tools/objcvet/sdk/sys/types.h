#pragma once
#include <stdint.h>
typedef char *caddr_t;
typedef uint32_t u_int32_t;
typedef uint8_t u_int8_t;
typedef unsigned long u_long;
typedef int32_t pid_t;
typedef int64_t off_t;
typedef uint16_t u_short;
typedef unsigned char u_char;
