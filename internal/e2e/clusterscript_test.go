package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"petstore/internal/etcd/etcdtest"
	"petstore/internal/petstoretest"
	"petstore/internal/testkit"
)

// make cluster (deploy/cluster.sh) with a real etcd: it takes its ports
// below the kernel's ephemeral range; a member that exits while the cluster
// starts is named at once with the end of its log, not after a 30 s wait;
// one killed later is named, the others keep running, and bash prints no
// job line with the member's command line.
func TestClusterScript(t *testing.T) {
	t.Parallel()
	etcd := etcdtest.Binary(t)

	t.Run("a member that cannot start", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		// An etcd whose second member exits at once, as one whose port was
		// taken would.
		wrapper := filepath.Join(dir, "etcd")
		script := "#!/bin/sh\ncase \" $* \" in *\" m2 \"*) echo 'listen tcp 127.0.0.1:1: bind: address already in use' >&2; exit 1;; esac\nexec " + etcd + " \"$@\"\n"
		if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
			t.Fatal(err)
		}
		c := startClusterScript(t, filepath.Join(dir, "cluster"), wrapper)
		began := time.Now()
		select {
		case <-c.done:
		case <-time.After(20 * time.Second):
			t.Fatalf("cluster.sh still running 20 s after a member exited; output:\n%s", c.out.String())
		}
		out := c.out.String()
		if !strings.Contains(out, "etcd-m2 (pid ") || !strings.Contains(out, "exited at start") || !strings.Contains(out, "bind: address already in use") {
			t.Errorf("cluster.sh does not say which member exited and why; output:\n%s", out)
		}
		t.Logf("cluster.sh gave up %v after it was started", time.Since(began).Round(time.Millisecond))
	})

	t.Run("a member killed", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "cluster")
		c := startClusterScript(t, dir, etcd)
		testkit.WaitFor(t, "cluster.sh to say the cluster runs", func() bool {
			return strings.Contains(c.out.String(), "petstore on etcd is running") || c.exited()
		})
		if c.exited() {
			t.Fatalf("cluster.sh exited; output:\n%s", c.out.String())
		}
		ports, err := os.ReadFile(filepath.Join(dir, "ports"))
		if err != nil {
			t.Fatal(err)
		}
		low := ephemeralLow(t)
		for _, line := range strings.Fields(string(ports)) {
			_, port, _ := strings.Cut(line, "=")
			if n, err := strconv.Atoi(port); err != nil || n < 1024 || n >= low {
				t.Errorf("port %s: want one below the ephemeral range (from %d)", line, low)
			}
		}
		pid := clusterPid(t, dir, "etcd-m1")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "cluster.sh to name the killed member", func() bool {
			return strings.Contains(c.out.String(), fmt.Sprintf("etcd-m1 (pid %d) exited; the others keep running", pid))
		})
		c.stop(t)
		if out := c.out.String(); strings.Contains(out, "Killed") || strings.Contains(out, "--data-dir") {
			t.Errorf("cluster.sh printed a job line; output:\n%s", out)
		}
	})
}

// clusterScript is one deploy/cluster.sh the test started.
type clusterScript struct {
	cmd  *exec.Cmd
	out  *testkit.LockedBuffer // its stdout and stderr
	done chan struct{}
}

func (c *clusterScript) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// startClusterScript starts deploy/cluster.sh DIR with etcd; the test's end
// stops it (SIGTERM: it stops what it started) and kills its process group
// if it overruns. It runs in DIR's parent and names DIR and the petstore
// binary relative to it, as someone does who runs it from elsewhere than
// the repository.
func startClusterScript(t *testing.T, dir, etcd string) *clusterScript {
	t.Helper()
	script, err := filepath.Abs("deploy/cluster.sh")
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(dir)
	if err := os.Symlink(petstoretest.BinaryPath(t), filepath.Join(parent, "petstore-bin")); err != nil {
		t.Fatal(err)
	}
	c := &clusterScript{cmd: exec.Command(script, filepath.Base(dir)), out: &testkit.LockedBuffer{}, done: make(chan struct{})}
	c.cmd.Dir = parent
	c.cmd.Env = append(os.Environ(), "ETCD="+etcd, "PETSTORE=./petstore-bin")
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() { c.stop(t) })
	return c
}

// stop sends SIGTERM and waits up to 20 s, then kills the process group.
func (c *clusterScript) stop(t *testing.T) {
	if c.exited() {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		t.Errorf("cluster.sh did not stop within 20 s of SIGTERM")
	}
}

// clusterPid returns the pid DIR/pids gives the process named what.
func clusterPid(t *testing.T, dir, what string) int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[1] == what {
			pid, err := strconv.Atoi(fields[0])
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no %s in %s/pids", what, dir)
	return 0
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	low, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil {
		t.Fatal(err)
	}
	return low
}
