//go:build schedperf

package schedperf

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	_ "k8s.io/component-base/logs/json/register"
	perf "k8s.io/kubernetes/test/integration/scheduler_perf"

	"github.com/fluence-sched/fluence/pkg/localcluster"
)

// The harness starts a fresh etcd for every workload by running an `etcd`
// executable found on PATH (k8s.io/kubernetes/test/integration/framework,
// RunCustomEtcd), with its client URL on a Unix socket. No etcd binary is
// installed here, so this test binary is that executable too: TestMain puts
// a link named etcd to itself first on PATH, and when started under that
// name it runs an embedded etcd (pkg/localcluster) and serves it on the
// socket the harness asked for.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "etcd" {
		os.Exit(etcdShim(os.Args[1:]))
	}
	if err := linkEtcd(); err != nil {
		fmt.Fprintf(os.Stderr, "schedperf: %v\n", err)
		os.Exit(1)
	}
	if err := perf.InitTests(); err != nil {
		fmt.Fprintf(os.Stderr, "schedperf: %v\n", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// linkEtcd puts a directory holding a link named etcd to this binary first on PATH.
func linkEtcd() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "schedperf-bin")
	if err != nil {
		return err
	}
	if err := os.Symlink(self, filepath.Join(dir, "etcd")); err != nil {
		return err
	}
	return os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// etcdShim is `etcd --data-dir D --listen-client-urls unix://S ...`: it
// starts an embedded etcd with its data in D on loopback TCP, relays the
// Unix socket S to it, and stops on SIGTERM. Other flags are ignored.
func etcdShim(args []string) int {
	fs := flag.NewFlagSet("etcd", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "")
	listen := fs.String("listen-client-urls", "", "")
	for _, name := range []string{"advertise-client-urls", "listen-peer-urls", "log-level", "quota-backend-bytes"} {
		fs.String(name, "", "")
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	sock := strings.TrimPrefix(*listen, "unix://")
	if *dataDir == "" || sock == *listen {
		fmt.Fprintf(os.Stderr, "etcd shim: want --data-dir and a unix:// --listen-client-urls, got %q\n", args)
		return 2
	}
	e, err := localcluster.StartEtcd(*dataDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd shim: %v\n", err)
		return 1
	}
	defer e.Close()
	u, err := url.Parse(e.URL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd shim: %v\n", err)
		return 1
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd shim: %v\n", err)
		return 1
	}
	defer l.Close()
	go relay(l, u.Host)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return 0
}

// relay copies every connection accepted on l to and from a new connection to addr.
func relay(l net.Listener, addr string) {
	for {
		in, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer in.Close()
			out, err := net.Dial("tcp", addr)
			if err != nil {
				return
			}
			defer out.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
		}()
	}
}
