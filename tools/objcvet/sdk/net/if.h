// net/if.h: struct ifreq as macOS declares it (the members Delta reads).
#pragma once
#include <sys/types.h>
#include <sys/socket.h>
#define IFNAMSIZ 16
struct ifreq {
	char ifr_name[IFNAMSIZ];
	union {
		struct sockaddr ifru_addr;
		short ifru_flags;
		int ifru_metric;
		int ifru_mtu;
		int ifru_media;
		caddr_t ifru_data;
		u_int32_t ifru_functional_type;
	} ifr_ifru;
};
#define IFRTYPE_FUNCTIONAL_UNKNOWN 0
#define IFRTYPE_FUNCTIONAL_LOOPBACK 1
#define IFRTYPE_FUNCTIONAL_WIRED 2
#define IFRTYPE_FUNCTIONAL_WIFI_INFRA 3
#define IFRTYPE_FUNCTIONAL_WIFI_AWDL 4
#define IFRTYPE_FUNCTIONAL_CELLULAR 5
#define IFRTYPE_FUNCTIONAL_INTCOPROC 6
#define IFRTYPE_FUNCTIONAL_COMPANIONLINK 7
