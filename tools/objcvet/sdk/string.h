#pragma once
#include <stddef.h>
void *memset(void *b, int c, size_t len);
size_t strlen(const char *s);
size_t strlcpy(char *dst, const char *src, size_t dstsize);
void *memcpy(void *restrict dst, const void *restrict src, size_t n);
