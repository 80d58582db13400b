#pragma once
#include <stddef.h>
int snprintf(char *str, size_t size, const char *format, ...);
int printf(const char *format, ...);
