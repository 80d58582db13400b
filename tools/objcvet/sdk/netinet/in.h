// netinet/in.h: the addresses and byte order Delta reads (listening_darwin.go).
#pragma once
#include <sys/types.h>
#include <sys/socket.h>
struct in_addr { uint32_t s_addr; };
struct in6_addr { union { uint8_t __u6_addr8[16]; uint16_t __u6_addr16[8]; uint32_t __u6_addr32[4]; } __u6_addr; };
#define ntohs(x) __builtin_bswap16((uint16_t)(x))
