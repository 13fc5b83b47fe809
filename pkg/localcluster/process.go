package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a controller running as a process of its own (Kueue, the MPI
// Operator, JobSet), started by StartKueue, StartMPIOperator or
// StartJobSet. Its output goes to its log file.
type Process struct {
	// Name says which controller it is ("kueue", "mpi-operator", "jobset").
	Name string
	// Log is the file the process writes its output to.
	Log string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // the process's exit, once exited is closed
	stop   sync.Once
}

// startProcess runs bin with args and this process's environment plus
// env, in the working directory dir ("" is this process's), its output
// appended to logPath. The process is stopped when ctx ends (SIGTERM,
// then SIGKILL after 10 s).
func startProcess(ctx context.Context, name, bin, dir, logPath string, env []string, args ...string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	p := &Process{Name: name, Log: logPath, cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Dir = dir
	err = startChild(p.cmd, func(err error) {
		p.err = err
		log.Close()
		close(p.exited)
	})
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	context.AfterFunc(ctx, p.Stop)
	return p, nil
}

// Stop sends SIGTERM, waits up to 10 s, then kills the process; it returns
// once the process has exited. It is idempotent.
func (p *Process) Stop() {
	p.stop.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
		}
	})
	<-p.exited
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is how the process exited; valid once Exited is closed.
func (p *Process) Err() error { return p.err }

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(bytes.TrimRight(b, "\n")), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitUntil polls ready every interval until it returns true, the process
// exits (an error with its log's tail) or timeout passes (an error with
// ready's last error and the tail).
func (p *Process) waitUntil(ctx context.Context, timeout time.Duration, ready func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited while starting (%v); the end of its log %s:\n%s", p.Name, p.err, p.Log, p.Tail(30))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready within %v (last: %v); the end of its log %s:\n%s", p.Name, timeout, last, p.Log, p.Tail(30))
		case <-tick.C:
		}
	}
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}
