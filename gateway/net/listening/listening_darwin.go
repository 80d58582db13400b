//go:build darwin && cgo

package listening

// The listening TCP sockets of every process this user may inspect, as
// lsof -i reads them: modelled on psutil's psutil/arch/osx/proc.c
// (psutil_proc_net_connections), which lists a process's descriptors with
// proc_pidinfo(PROC_PIDLISTFDS) and reads each socket's with
// proc_pidfdinfo(PROC_PIDFDSOCKETINFO): a TCP socket (SOCKINFO_TCP) in
// TSI_S_LISTEN, its local address and port (network order) in
// tcpsi_ini. The processes are proc_listpids(PROC_ALL_PIDS)'s, named by
// proc_name. Which sockets an app could be shared at, and how ports merge,
// is portsOf's (pure, tested on Linux).

/*
#include <stdlib.h>
#include <string.h>
#include <libproc.h>
#include <sys/proc_info.h>
#include <netinet/in.h>

// delta_listener is one listening TCP socket: its process, its family
// (4 or 6), its local address (4 or 16 bytes) and port (host order).
typedef struct {
	int pid;
	int family;
	unsigned char addr[16];
	int port;
} delta_listener;

// delta_listeners fills out (room for max) with the listening TCP sockets
// of every process this user may inspect; it returns how many, or -1 when
// the processes cannot be listed. A process that ends meanwhile, or is
// not this user's, is passed over.
static int delta_listeners(delta_listener *out, int max) {
	int bytes = proc_listpids(PROC_ALL_PIDS, 0, NULL, 0);
	if (bytes <= 0)
		return -1;
	bytes += 64 * (int)sizeof(pid_t); // processes started meanwhile
	pid_t *pids = calloc(1, (size_t)bytes);
	if (pids == NULL)
		return -1;
	bytes = proc_listpids(PROC_ALL_PIDS, 0, pids, bytes);
	if (bytes <= 0) {
		free(pids);
		return -1;
	}
	int n = 0;
	for (int i = 0; i < bytes / (int)sizeof(pid_t) && n < max; i++) {
		if (pids[i] <= 0)
			continue;
		int fdbytes = proc_pidinfo(pids[i], PROC_PIDLISTFDS, 0, NULL, 0);
		if (fdbytes <= 0)
			continue;
		struct proc_fdinfo *fds = calloc(1, (size_t)fdbytes);
		if (fds == NULL)
			continue;
		fdbytes = proc_pidinfo(pids[i], PROC_PIDLISTFDS, 0, fds, fdbytes);
		for (int j = 0; j < fdbytes / (int)sizeof(struct proc_fdinfo) && n < max; j++) {
			if (fds[j].proc_fdtype != PROX_FDTYPE_SOCKET)
				continue;
			struct socket_fdinfo si;
			memset(&si, 0, sizeof(si));
			if (proc_pidfdinfo(pids[i], fds[j].proc_fd, PROC_PIDFDSOCKETINFO, &si, (int)sizeof(si)) != (int)sizeof(si))
				continue;
			if (si.psi.soi_kind != SOCKINFO_TCP || si.psi.soi_proto.pri_tcp.tcpsi_state != TSI_S_LISTEN)
				continue;
			struct in_sockinfo *ini = &si.psi.soi_proto.pri_tcp.tcpsi_ini;
			delta_listener *l = &out[n++];
			memset(l, 0, sizeof(*l));
			l->pid = pids[i];
			l->port = ntohs((uint16_t)ini->insi_lport);
			if (si.psi.soi_family == AF_INET6 && (ini->insi_vflag & INI_IPV6)) {
				l->family = 6;
				memcpy(l->addr, &ini->insi_laddr.ina_6, 16);
			} else {
				l->family = 4;
				memcpy(l->addr, &ini->insi_laddr.ina_46.i46a_addr4, 4);
			}
		}
		free(fds);
	}
	free(pids);
	return n;
}

// delta_proc_name writes pid's program name into buf; 0 if it has none
// this user may read.
static int delta_proc_name(int pid, char *buf, int size) {
	return proc_name(pid, buf, (uint32_t)size);
}
*/
import "C"

import (
	"errors"
	"net/netip"
	"unsafe"
)

// maxListeners bounds the sockets read at once (a computer listens on
// some dozens).
const maxListeners = 4096

// Ports lists the TCP ports programs listen on that loopback reaches, each
// with its program where libproc tells (this user's processes).
func Ports() ([]Port, error) {
	buf := make([]C.delta_listener, maxListeners)
	n := int(C.delta_listeners(&buf[0], C.int(len(buf))))
	if n < 0 {
		return nil, errors.New("listening: libproc could not list this computer's processes")
	}
	var ls []listener
	names := map[int]string{}
	for _, l := range buf[:n] {
		var a netip.Addr
		if l.family == 6 {
			a = netip.AddrFrom16(*(*[16]byte)(unsafe.Pointer(&l.addr[0])))
		} else {
			a = netip.AddrFrom4(*(*[4]byte)(unsafe.Pointer(&l.addr[0])))
		}
		pid := int(l.pid)
		ls = append(ls, listener{addr: netip.AddrPortFrom(a, uint16(l.port)), pid: pid})
		if _, ok := names[pid]; !ok {
			var name [256]C.char
			if C.delta_proc_name(C.int(pid), &name[0], C.int(len(name))) > 0 {
				names[pid] = C.GoString(&name[0])
			} else {
				names[pid] = ""
			}
		}
	}
	return portsOf(ls, names), nil
}
