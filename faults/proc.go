package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// procs owns every child process of a run (etcd, petstore, strace).
//
// Children are started with Pdeathsig SIGKILL, which the kernel sends when
// the *thread* that started the child exits, not the process. Go moves
// goroutines between threads and ends idle ones, so every child is started
// from one goroutine locked to its thread for the whole run: the children
// die with the harness however it ends, and only then. Each child is also
// the leader of its own process group, so a Ctrl-C at the terminal reaches
// the harness alone, which then stops each child by its pid.
type procs struct {
	starts chan startRequest
	mu     sync.Mutex
	live   map[*child]struct{}
	closed bool
}

type startRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// child is one started process. exited is closed once it has been reaped.
type child struct {
	name   string
	cmd    *exec.Cmd
	pid    int
	exited chan struct{}
	err    error // the wait status, once exited is closed
}

func newProcs() *procs {
	p := &procs{starts: make(chan startRequest), live: map[*child]struct{}{}}
	go p.launcher()
	return p
}

// launcher starts the children. It never unlocks its thread, so when it
// returns the thread ends, and with it any child still alive.
func (p *procs) launcher() {
	runtime.LockOSThread()
	for r := range p.starts {
		r.done <- r.cmd.Start()
	}
}

// spawn starts argv with env (and nothing else of the harness's
// environment), its stdout and stderr appended to logPath.
func (p *procs) spawn(name string, argv, env []string, logPath string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		logf.Close()
		return nil, errors.New("the run is stopping")
	}
	done := make(chan error, 1)
	p.starts <- startRequest{cmd: cmd, done: done}
	err = <-done
	if err != nil {
		p.mu.Unlock()
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{})}
	p.live[c] = struct{}{}
	p.mu.Unlock()
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		p.mu.Lock()
		delete(p.live, c)
		p.mu.Unlock()
		close(c.exited)
	}()
	return c, nil
}

// running reports whether c has not exited yet.
func (c *child) running() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to c by its pid; a child that has exited is left alone
// (os.Process knows, so a reused pid is never hit).
func (c *child) signal(sig syscall.Signal) {
	if c.running() {
		_ = c.cmd.Process.Signal(sig)
	}
}

// wait waits at most d for c to exit and reports whether it did.
func (c *child) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return false
	}
}

// kill sends SIGKILL and waits (bounded) until c is reaped.
func (c *child) kill() {
	c.signal(syscall.SIGKILL)
	c.wait(10 * time.Second)
}

// stop asks c to stop with SIGTERM (a stopped process is continued first,
// or it could not act on it), and kills it after grace.
func (c *child) stop(grace time.Duration) {
	c.signal(syscall.SIGCONT)
	c.signal(syscall.SIGTERM)
	if !c.wait(grace) {
		c.kill()
	}
}

// close kills every child still alive, waits for them (bounded), and ends
// the launcher. No child can be started afterwards.
func (p *procs) close() {
	p.mu.Lock()
	p.closed = true
	var all []*child
	for c := range p.live {
		all = append(all, c)
	}
	p.mu.Unlock()
	for _, c := range all {
		c.signal(syscall.SIGKILL)
	}
	for _, c := range all {
		c.wait(10 * time.Second)
	}
	close(p.starts)
}

// leftovers names the children that are still alive.
func (p *procs) leftovers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for c := range p.live {
		out = append(out, fmt.Sprintf("%s (pid %d)", c.name, c.pid))
	}
	return out
}
