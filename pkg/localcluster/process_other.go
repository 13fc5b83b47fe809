//go:build !linux

package localcluster

import "syscall"

// childAttrs: the child is not in the caller's process group (a Ctrl-C at
// the terminal reaches fluence up, which stops it in its turn). Only Linux
// can have a child killed with its parent: elsewhere a killed fluence up
// leaves its neighbours running.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
