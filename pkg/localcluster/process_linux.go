package localcluster

import "syscall"

// childAttrs: the child is not in the caller's process group (a Ctrl-C at
// the terminal reaches fluence up, which stops it in its turn), and is
// killed if fluence up itself is killed (SIGKILL leaves it no time to
// stop its children), rather than left running against an API server
// that is gone.
func childAttrs() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
