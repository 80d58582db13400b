package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// The Go floor (package floor): the least an HTTP/1.1 forwarder written
// in Go can do, as the same two hops as nginx's and Caddy's.

// floorArg, as the first argument, makes this program the floor's
// process: bench floor APP CERT KEY.
const floorArg = "floor"

// startFloor runs the floor's two hops to the owner app as a process of
// this program.
func startFloor(root, appAddr string) (plain, tlsT target, stop func(), err error) {
	dir := filepath.Join(root, "floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return plain, tlsT, nil, err
	}
	certFile, keyFile, err := selfSigned(dir)
	if err != nil {
		return plain, tlsT, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return plain, tlsT, nil, err
	}
	cmd := exec.Command(exe, floorArg, appAddr, certFile, keyFile)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return plain, tlsT, nil, err
	}
	if err := cmd.Start(); err != nil {
		return plain, tlsT, nil, fmt.Errorf("start the Go floor: %w", err)
	}
	stop = func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }
	var front1, front2 string
	if _, err := fmt.Fscan(out, &front1, &front2); err != nil {
		stop()
		return plain, tlsT, nil, fmt.Errorf("the Go floor did not say where it listens: %w", err)
	}
	pids := []int{cmd.Process.Pid}
	plain = target{name: "Go floor (2 hops)", role: roleFloor, readURL: "http://" + front1, callURL: "http://" + front1 + "/c", pids: pids}
	tlsT = target{name: "Go floor (2 hops, TLS between)", role: roleFloorTLS, readURL: "http://" + front2, callURL: "http://" + front2 + "/c", pids: pids}
	return plain, tlsT, stop, nil
}
