//go:build schedperf

package schedperf

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuReading is the CPU time spent so far: by the whole machine (every
// process, etcd's included) and by this process (API server, harness,
// scheduler). On a machine whose CPUs the benchmark saturates, pods/s
// follows CPU per pod, so comparing CPU per pod says whether two runs were
// bound alike. (It is not immune to the host: on a shared VM the same work
// took from 3.8 to 6.0 ms of CPU per pod in runs a minute apart.)
type cpuReading struct {
	busy, total time.Duration // machine: non-idle, and all, summed over CPUs
	process     time.Duration // this process: user + system
	ok          bool
}

// readCPU reads /proc/stat's first line (user nice system idle iowait
// irq softirq steal ...) and getrusage. Only Linux has /proc/stat: elsewhere
// the reading is not ok and the report prints no CPU figures.
func readCPU() cpuReading {
	var r cpuReading
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return r
	}
	r.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	f, err := os.Open("/proc/stat")
	if err != nil {
		return r
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return r
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 9 || fields[0] != "cpu" {
		return r
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on every Linux architecture Go supports
	for i, s := range fields[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return r
		}
		d := time.Duration(v) * tick
		r.total += d
		if i != 3 && i != 4 { // idle, iowait
			r.busy += d
		}
	}
	r.ok = true
	return r
}

// cpuPerPod is the CPU the window from a to b took per pod, in ms (machine
// and process), and the machine's busy share of its CPUs over it.
func cpuPerPod(a, b cpuReading, pods int) (machine, process, share float64, ok bool) {
	if !a.ok || !b.ok || pods == 0 || b.total <= a.total {
		return 0, 0, 0, false
	}
	n := float64(pods)
	return ms(b.busy-a.busy) / n, ms(b.process-a.process) / n, float64(b.busy-a.busy) / float64(b.total-a.total), true
}
