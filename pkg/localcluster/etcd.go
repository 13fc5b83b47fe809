package localcluster

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Etcd is an embedded etcd serving plain HTTP on 127.0.0.1.
type Etcd struct {
	// URL is the client URL (http://127.0.0.1:port).
	URL   string
	e     *embed.Etcd
	level zap.AtomicLevel
}

// StartEtcd runs an etcd with its data in dir on two free loopback ports.
// Writes are not fsynced: the data lives only as long as the process. A
// chosen port taken in the meantime by another process is retried.
func StartEtcd(dir string) (*Etcd, error) {
	var err error
	for range 5 {
		var e *Etcd
		if e, err = startEtcdOnce(dir); err == nil {
			return e, nil
		}
	}
	return nil, fmt.Errorf("starting etcd: %w", err)
}

func startEtcdOnce(dir string) (*Etcd, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "fluence-local"
	cfg.Dir = dir
	cfg.UnsafeNoFsync = true
	clientU := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerU := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls = []url.URL{clientU}
	cfg.AdvertiseClientUrls = []url.URL{clientU}
	cfg.ListenPeerUrls = []url.URL{peerU}
	cfg.AdvertisePeerUrls = []url.URL{peerU}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = 8 << 30
	// etcd logs through zap; only errors are worth a user's attention.
	zcfg := zap.NewProductionConfig()
	level := zap.NewAtomicLevelAt(zapcore.ErrorLevel)
	zcfg.Level = level
	zcfg.OutputPaths = []string{"stderr"}
	zcfg.ErrorOutputPaths = []string{"stderr"}
	lg, err := zcfg.Build()
	if err != nil {
		return nil, err
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.Named("etcd"))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd took more than 60 s to start")
	}
	return &Etcd{URL: clientU.String(), e: e, level: level}, nil
}

// Close stops etcd and waits for it. The data directory is left to the
// caller.
func (e *Etcd) Close() {
	// Closing makes every listener log "server closed" as an error.
	e.level.SetLevel(zapcore.FatalLevel)
	e.e.Close()
}

// FreePorts returns n distinct loopback TCP ports that were free a moment ago.
func FreePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
