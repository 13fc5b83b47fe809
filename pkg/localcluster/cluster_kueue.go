package localcluster

import (
	"context"
	"os"
	"path/filepath"
)

// StartKueue runs Kueue (the function StartKueue) against the cluster
// with the given integrations (nil: DefaultKueueFrameworks), its
// configuration, certificates, log and kubeconfig in the cluster's work
// directory. Stop stops it first: Kueue would otherwise spend its last
// seconds retrying an API server that is gone.
func (c *Cluster) StartKueue(ctx context.Context, frameworks []string) (*Process, error) {
	dir := filepath.Join(c.Dir, Kueue)
	kubeconfig, err := c.WriteKubeconfig(filepath.Join(c.Dir, "kubeconfig-"+Kueue), c.Kubeconfig(""))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := StartKueue(ctx, c.Config, KueueOptions{Dir: dir, Kubeconfig: kubeconfig, Frameworks: frameworks})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.neighbours = append(c.neighbours, p)
	c.mu.Unlock()
	return p, nil
}
