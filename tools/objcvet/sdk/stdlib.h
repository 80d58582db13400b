#pragma once
#include <stddef.h>
void free(void *ptr);
void *malloc(size_t size);
void *calloc(size_t count, size_t size);
