package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// etcdMember is one member of the harness's etcd cluster.
type etcdMember struct {
	name       string
	clientAddr string
	peerAddr   string
	dataDir    string
	logPath    string
	id         string // header.member_id, learned once the cluster is up
	proc       *child
}

// etcdCluster is a 3-member etcd cluster on 127.0.0.1.
type etcdCluster struct {
	procs   *procs
	members []*etcdMember
	initial string
	http    *http.Client
}

// freePorts picks n distinct free ports by listening on :0 and closing:
// all are held until all are chosen, so they differ.
func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// startEtcd starts a 3-member cluster with its data and logs under dir and
// waits until every member is healthy. A clash on a port picked free (taken
// by another process between pick and bind) fails the start: it is tried
// again on new ports, three times at most.
func startEtcd(ctx context.Context, pr *procs, dir string) (*etcdCluster, error) {
	var last error
	for try := 1; try <= 3; try++ {
		c, err := tryStartEtcd(ctx, pr, filepath.Join(dir, fmt.Sprintf("etcd-%d", try)))
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("etcd cluster did not start: %w", last)
}

func tryStartEtcd(ctx context.Context, pr *procs, dir string) (*etcdCluster, error) {
	addrs, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	c := &etcdCluster{procs: pr, http: &http.Client{Timeout: time.Second}}
	var peers []string
	for i := range 3 {
		m := &etcdMember{name: fmt.Sprintf("m%d", i+1), clientAddr: addrs[2*i], peerAddr: addrs[2*i+1],
			dataDir: filepath.Join(dir, fmt.Sprintf("m%d", i+1)), logPath: filepath.Join(dir, fmt.Sprintf("m%d.log", i+1))}
		c.members = append(c.members, m)
		peers = append(peers, fmt.Sprintf("%s=http://%s", m.name, m.peerAddr))
	}
	c.initial = strings.Join(peers, ",")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for i := range c.members {
		if err := c.spawn(i); err != nil {
			c.close()
			return nil, err
		}
	}
	for i := range c.members {
		if err := c.waitHealthy(ctx, i, 20*time.Second); err != nil {
			c.close()
			return nil, err
		}
	}
	for i, m := range c.members {
		st, err := c.status(ctx, i)
		if err != nil {
			c.close()
			return nil, err
		}
		m.id = st.Header.MemberID
	}
	return c, nil
}

func (c *etcdCluster) spawn(i int) error {
	m := c.members[i]
	argv := []string{"etcd", "--name", m.name, "--data-dir", m.dataDir, "--logger", "zap",
		"--listen-client-urls", "http://" + m.clientAddr, "--advertise-client-urls", "http://" + m.clientAddr,
		"--listen-peer-urls", "http://" + m.peerAddr, "--initial-advertise-peer-urls", "http://" + m.peerAddr,
		"--initial-cluster", c.initial, "--initial-cluster-token", "petstore-faults",
		"--initial-cluster-state", "new"}
	path, err := lookPath("etcd")
	if err != nil {
		return err
	}
	argv[0] = path
	p, err := c.procs.spawn("etcd "+m.name, argv, []string{"PATH=/usr/bin:/bin"}, m.logPath)
	if err != nil {
		return err
	}
	m.proc = p
	return nil
}

// waitHealthy waits until member i answers /health with true.
func (c *etcdCluster) waitHealthy(ctx context.Context, i int, d time.Duration) error {
	m := c.members[i]
	err := poll(ctx, d, 100*time.Millisecond, func() (bool, error) {
		if !m.proc.running() {
			return false, fmt.Errorf("etcd %s exited (%v); see %s", m.name, m.proc.err, m.logPath)
		}
		resp, err := c.http.Get("http://" + m.clientAddr + "/health")
		if err != nil {
			return false, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return bytes.Contains(b, []byte(`"health":"true"`)), nil
	})
	if err != nil {
		return fmt.Errorf("etcd %s not healthy: %w", m.name, err)
	}
	return nil
}

// memberStatus is the part of /v3/maintenance/status the harness reads.
type memberStatus struct {
	Header struct {
		MemberID string `json:"member_id"`
	} `json:"header"`
	Leader string `json:"leader"`
}

func (c *etcdCluster) status(ctx context.Context, i int) (memberStatus, error) {
	var st memberStatus
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"http://"+c.members[i].clientAddr+"/v3/maintenance/status", strings.NewReader("{}"))
	if err != nil {
		return st, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("status of %s: HTTP %d", c.members[i].name, resp.StatusCode)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&st)
	return st, err
}

// leader returns the index of the member that leads, asking the members
// up() allows; it waits (bounded) for an election to finish.
func (c *etcdCluster) leader(ctx context.Context, up func(int) bool) (int, error) {
	found := -1
	err := poll(ctx, 15*time.Second, 200*time.Millisecond, func() (bool, error) {
		found = c.leaderNow(ctx, up)
		return found >= 0, nil
	})
	if err != nil {
		return -1, fmt.Errorf("no etcd leader: %w", err)
	}
	return found, nil
}

// leaderNow returns the member that leads now, or -1: a member up() allows
// whose own status says it is the leader. Each member gets 500 ms to say.
func (c *etcdCluster) leaderNow(ctx context.Context, up func(int) bool) int {
	for i, m := range c.members {
		if !up(i) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		st, err := c.status(sctx, i)
		cancel()
		if err == nil && st.Leader == m.id {
			return i
		}
	}
	return -1
}

func (c *etcdCluster) kill(i int)   { c.members[i].proc.kill() }
func (c *etcdCluster) freeze(i int) { c.members[i].proc.signal(syscall.SIGSTOP) }
func (c *etcdCluster) thaw(i int)   { c.members[i].proc.signal(syscall.SIGCONT) }

// restart starts member i again on its data and waits until it is healthy.
func (c *etcdCluster) restart(ctx context.Context, i int) error {
	if c.members[i].proc.running() {
		return fmt.Errorf("etcd %s is still running", c.members[i].name)
	}
	if err := c.spawn(i); err != nil {
		return err
	}
	return c.waitHealthy(ctx, i, 30*time.Second)
}

// close kills every member; their data directories are removed (each
// holds 64 MB of preallocated log), their logs are kept.
func (c *etcdCluster) close() {
	for _, m := range c.members {
		if m.proc != nil {
			m.proc.kill()
		}
	}
	for _, m := range c.members {
		os.RemoveAll(m.dataDir)
	}
}

// poll calls f every step until it reports done, fails, ctx ends or d has
// passed.
func poll(ctx context.Context, d, step time.Duration, f func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		done, err := f()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v", d)
		}
		if err := sleepCtx(ctx, step); err != nil {
			return err
		}
	}
}

// sleepCtx sleeps d, or less if ctx ends (then its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// lookPath finds a tool in the usual places, not in the caller's PATH
// alone: the harness may run with a PATH that lacks /usr/sbin.
func lookPath(name string) (string, error) {
	for _, dir := range append(filepath.SplitList(os.Getenv("PATH")), "/usr/bin", "/usr/sbin", "/bin") {
		p := filepath.Join(dir, name)
		if info, err := os.Stat(p); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New(name + " not found (PATH, /usr/bin, /usr/sbin)")
}
