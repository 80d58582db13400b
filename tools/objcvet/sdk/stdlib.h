#pragma once
#include <stddef.h>
void free(void *ptr);
void *malloc(size_t size);
