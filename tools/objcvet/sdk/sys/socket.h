#pragma once
#include <sys/types.h>
#define AF_INET 2
#define AF_INET6 30
#define SOCK_DGRAM 2
struct sockaddr { uint8_t sa_len; uint8_t sa_family; char sa_data[14]; };
int socket(int domain, int type, int protocol);
