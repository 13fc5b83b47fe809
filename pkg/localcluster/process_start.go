package localcluster

import (
	"os/exec"
	"runtime"
)

// startChild starts cmd and waits for it in a goroutine that keeps its OS
// thread for the child's whole life, then calls done with how it exited.
// On Linux the child is asked to be killed when its parent dies
// (childAttrs): the kernel ties that to the thread that started the child,
// not the process, so the thread must not go away first (the Go runtime
// may end an idle thread; a locked one ends only with its goroutine).
func startChild(cmd *exec.Cmd, done func(error)) error {
	cmd.SysProcAttr = childAttrs()
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Not unlocked: the goroutine's end then ends the thread, after
		// the child has exited.
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done(cmd.Wait())
	}()
	return <-started
}
