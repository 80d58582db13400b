// sys/proc_info.h: what Delta reads of a process's sockets
// (listening_darwin.go), as XNU's bsd/sys/proc_info.h declares it: the
// constants, and of each struct and union the members Delta reads (and
// those before them where they are few), with their types. The layout is
// the real SDK's on a Mac: nothing here sizes anything.
#pragma once
#include <stdint.h>
#include <sys/types.h>
#include <netinet/in.h>

#define PROC_ALL_PIDS 1
#define PROC_PIDLISTFDS 1
#define PROC_PIDFDSOCKETINFO 3
#define PROX_FDTYPE_SOCKET 2
#define INI_IPV4 0x1
#define INI_IPV6 0x2
#define TSI_T_NTIMERS 4
#define TSI_S_LISTEN 1

struct proc_fdinfo {
	int32_t proc_fd;
	uint32_t proc_fdtype;
};

struct proc_fileinfo {
	uint32_t fi_openflags;
	uint32_t fi_status;
	off_t fi_offset;
	int32_t fi_type;
	uint32_t fi_guardflags;
};

struct in4in6_addr {
	u_int32_t i46a_pad32[3];
	struct in_addr i46a_addr4;
};

struct in_sockinfo {
	int insi_fport;
	int insi_lport;
	uint64_t insi_gencnt;
	uint32_t insi_flags;
	uint32_t insi_flow;
	uint8_t insi_vflag;
	uint8_t insi_ip_ttl;
	uint32_t rfu_1;
	union {
		struct in4in6_addr ina_46;
		struct in6_addr ina_6;
	} insi_faddr;
	union {
		struct in4in6_addr ina_46;
		struct in6_addr ina_6;
	} insi_laddr;
};

struct tcp_sockinfo {
	struct in_sockinfo tcpsi_ini;
	int tcpsi_state;
	int tcpsi_timer[TSI_T_NTIMERS];
	int tcpsi_mss;
	uint32_t tcpsi_flags;
	uint32_t rfu_1;
	uint64_t tcpsi_tp;
};

enum {
	SOCKINFO_GENERIC = 0,
	SOCKINFO_IN = 1,
	SOCKINFO_TCP = 2,
};

struct socket_info {
	int soi_type;
	int soi_protocol;
	int soi_family;
	int soi_kind;
	union {
		struct in_sockinfo pri_in;
		struct tcp_sockinfo pri_tcp;
	} soi_proto;
};

struct socket_fdinfo {
	struct proc_fileinfo pfi;
	struct socket_info psi;
};
