package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"syscall"
	"time"
)

// instance is one petstore process of a scenario. It keeps its address
// across restarts, so that clients keep their URLs.
type instance struct {
	idx     int
	addr    string
	env     []string
	logPath string
	bin     string
	procs   *procs
	proc    *child
	probe   *http.Client
}

// newInstance prepares petstore number idx on a free port with data (a
// journal path or an etcd:// URL); start runs it.
func newInstance(pr *procs, bin, dir string, idx int, key, data string) (*instance, error) {
	addrs, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	env := []string{
		"PATH=/usr/bin:/bin",
		"PETSTORE_ADDR=" + addrs[0],
		"PETSTORE_API_KEYS=" + key,
		"PETSTORE_DATA=" + data,
		"PETSTORE_ETCD_START_TIMEOUT=30s",
	}
	return &instance{idx: idx, addr: addrs[0], env: env, bin: bin, procs: pr,
		logPath: filepath.Join(dir, fmt.Sprintf("petstore-%d.log", idx)),
		probe:   &http.Client{Timeout: time.Second}}, nil
}

func (in *instance) url() string { return "http://" + in.addr }

// start runs petstore and waits until it serves. A start that fails at
// once (the port taken meanwhile, the journal's lock not yet released by a
// process being reaped) is tried again, a few times.
func (in *instance) start(ctx context.Context) error {
	var last error
	for try := 0; try < 3 && ctx.Err() == nil; try++ {
		p, err := in.procs.spawn(fmt.Sprintf("petstore %d", in.idx), []string{in.bin}, in.env, in.logPath)
		if err != nil {
			return err
		}
		in.proc = p
		if last = in.waitReady(ctx, 30*time.Second); last == nil {
			return nil
		}
		p.kill()
		sleepCtx(ctx, 300*time.Millisecond)
	}
	return fmt.Errorf("petstore %d did not start: %w (see %s)", in.idx, last, in.logPath)
}

// waitReady waits until /v1/openapi.json answers 200 (it needs no key and
// no quorum; /livez may not exist in every version).
func (in *instance) waitReady(ctx context.Context, d time.Duration) error {
	return poll(ctx, d, 50*time.Millisecond, func() (bool, error) {
		if !in.proc.running() {
			return false, fmt.Errorf("exited: %v", in.proc.err)
		}
		resp, err := in.probe.Get(in.url() + "/v1/openapi.json")
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func (in *instance) pid() int { return in.proc.pid }
func (in *instance) kill()    { in.proc.kill() }
func (in *instance) freeze()  { in.proc.signal(syscall.SIGSTOP) }
func (in *instance) thaw()    { in.proc.signal(syscall.SIGCONT) }

// stop stops petstore cleanly (SIGTERM; killed if it takes over 15 s).
func (in *instance) stop() {
	if in.proc != nil {
		in.proc.stop(15 * time.Second)
	}
}
