package etcdtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/internal/etcd"
)

// A real etcd cluster for integration tests: three members on 127.0.0.1,
// free ports, data in t.TempDir(), started and stopped by the test itself
// (StartCluster); or one cluster the tests of a package share (Shared),
// for tests that keep to prefixes of their own and stop no member.
// Without an etcd binary both skip loudly, unless
// PETSTORE_TEST_REQUIRE_ETCD=1 (set by .ci/run), which makes them fail.

// Cluster is a cluster a test started.
type Cluster struct {
	members []*Member
	client  *http.Client // for /health and status; 2 s per request
}

// Member is one etcd process and what it takes to start it again.
type Member struct {
	name   string
	client string // 127.0.0.1:port
	args   []string
	log    string // its stderr, kept in the test's temp dir

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Binary returns the path of etcd, or skips the test (fails it when
// PETSTORE_TEST_REQUIRE_ETCD=1) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv("PETSTORE_TEST_REQUIRE_ETCD") == "1" {
			t.Fatalf("PETSTORE_TEST_REQUIRE_ETCD=1 but no etcd binary is on PATH (apt-get install etcd-server): %v", err)
		}
		t.Skip("********** SKIPPED: no etcd binary on PATH, so the etcd store was NOT tested against a real cluster. " +
			"Install one (apt-get install etcd-server) or run .ci/run, which does, and sets PETSTORE_TEST_REQUIRE_ETCD=1. **********")
	}
	if testing.Short() {
		t.Skip("starts an etcd cluster")
	}
	return path
}

// freePorts returns n ports that nothing listened on a moment ago. Holding
// all the listeners until every port is known keeps them distinct.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// StartCluster starts a 3-member cluster and waits, at most 30 s, until
// every member reports itself healthy. Every member is killed at the end of
// the test.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	c := startCluster(t, t.TempDir(), nil)
	t.Cleanup(c.kill)
	c.WaitHealthy(t, 30*time.Second)
	return c
}

// shared is the cluster of Shared.
var shared struct {
	once sync.Once
	dir  string
	c    *Cluster
}

// Shared returns the cluster the tests of this process share, started by
// the first to ask. A test that shares it keeps to a prefix of its own,
// stops no member and measures nothing cluster-wide (others write beside
// it). The package's TestMain stops it with StopShared.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	Binary(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "petstore-etcd-")
		if err != nil {
			t.Fatal(err)
		}
		shared.dir = dir
		shared.c = startCluster(t, dir, calm)
	})
	if shared.c == nil {
		t.Fatal("the shared etcd cluster did not start (see the test that started it)")
	}
	shared.c.WaitHealthy(t, 30*time.Second)
	return shared.c
}

// StopShared kills the shared cluster, if one was started, and removes its
// data.
func StopShared() {
	if shared.c != nil {
		shared.c.kill()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// calm are the timings of the shared cluster, which no test stops a member
// of: etcd's defaults (a heartbeat every 100 ms, an election after 1 s
// without one) make a member whose process waits a second for a CPU, as
// happens under the race detector on a busy two-CPU machine, start an
// election; its writes then stall for the election, long enough for
// petstore's 2 s deadline on them. Tests that stop members start clusters
// of their own, on the defaults, so that a leader is replaced quickly.
var calm = []string{"--heartbeat-interval", "250", "--election-timeout", "5000"}

// startCluster starts three members with their data in dir, passing each
// the flags extra too.
func startCluster(t testing.TB, dir string, extra []string) *Cluster {
	t.Helper()
	bin := Binary(t)
	const n = 3
	ports := freePorts(t, 2*n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=http://127.0.0.1:%d", i+1, ports[n+i]))
	}
	c := &Cluster{client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}}
	for i := range n {
		name := fmt.Sprintf("m%d", i+1)
		client := fmt.Sprintf("127.0.0.1:%d", ports[i])
		peer := fmt.Sprintf("http://127.0.0.1:%d", ports[n+i])
		m := &Member{name: name, client: client, log: filepath.Join(dir, name+".log"), args: []string{bin,
			"--name", name, "--data-dir", filepath.Join(dir, name),
			"--listen-client-urls", "http://" + client, "--advertise-client-urls", "http://" + client,
			"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", fmt.Sprintf("petstore-test-%d", ports[0]),
		}}
		m.args = append(m.args, extra...)
		c.members = append(c.members, m)
		m.Start(t)
	}
	return c
}

// kill kills every member.
func (c *Cluster) kill() {
	for _, m := range c.members {
		m.Kill()
	}
}

// Start starts the member's etcd process (again, after Kill), with its data
// directory as it was; the cluster kills it at the end of the test.
func (m *Member) Start(t testing.TB) {
	t.Helper()
	logFile, err := os.OpenFile(m.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(m.args[0], m.args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// ETCD_* variables of the environment would override the flags.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "ETCD_") })
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting etcd %s: %v", m.name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
}

// Kill sends SIGKILL (kill -9) and waits, at most 10 s, for the process to
// be gone. It does nothing to a member already killed.
func (m *Member) Kill() {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// Endpoints returns the members' client addresses, comma-separated.
func (c *Cluster) Endpoints() string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.client)
	}
	return strings.Join(eps, ",")
}

// Data returns PETSTORE_DATA for prefix on this cluster.
func (c *Cluster) Data(prefix string) string {
	return "etcd://" + c.Endpoints() + "/" + prefix
}

// WaitHealthy polls every running member's /health until all answer true.
func (c *Cluster) WaitHealthy(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		healthy := 0
		for _, m := range c.members {
			resp, err := c.client.Get("http://" + m.client + "/health")
			if err != nil {
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(body, []byte(`"health":"true"`)) {
				healthy++
			}
		}
		if healthy == len(c.members) {
			return
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, bounded by the deadline
	}
	c.dumpLogs(t)
	t.Fatalf("etcd cluster not healthy within %v", within)
}

// Leader returns the member that is the leader now, by asking each live
// member for its status: the one whose member_id is the leader.
func (c *Cluster) Leader(t testing.TB) *Member {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range c.members {
			resp, err := c.client.Post("http://"+m.client+"/v3/maintenance/status", "application/json", strings.NewReader("{}"))
			if err != nil {
				continue
			}
			var st struct {
				Header etcd.Header `json:"header"`
				Leader etcd.Int64  `json:"leader"`
			}
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberID {
				return m
			}
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded
	}
	t.Fatal("no etcd member says it is the leader")
	return nil
}

func (c *Cluster) dumpLogs(t testing.TB) {
	for _, m := range c.members {
		b, _ := os.ReadFile(m.log)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("etcd %s log (tail):\n%s", m.name, b)
	}
}

// Members returns the cluster's members.
func (c *Cluster) Members() []*Member { return c.members }

// Client returns the member's client address: "127.0.0.1:port".
func (m *Member) Client() string { return m.client }

// Name returns the member's name: m1, m2 or m3.
func (m *Member) Name() string { return m.name }
