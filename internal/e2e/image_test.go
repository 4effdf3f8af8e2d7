package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/petstoretest"
)

// The container image of `make image` (docs/operations.md, "Container
// image"), built and run with podman: its journal outlives the container
// in a volume, and the service inside runs as an unprivileged user.

// imageUser is the user and group the image runs as (Containerfile).
const imageUser = 65532

// podmanCommandTimeout bounds each podman command a test runs.
const podmanCommandTimeout = 60 * time.Second

// podman runs the podman commands of one test, with the global flags this
// machine needs, and fails the test when one fails.
type podman struct {
	t      *testing.T
	path   string
	global []string // flags before the command: runtime and cgroup manager
	env    []string // the environment podman runs with
}

// newPodman finds podman. Without it the test skips, unless
// PETSTORE_TEST_REQUIRE_PODMAN=1 (set by .ci/run): then it fails.
func newPodman(t *testing.T) *podman {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a container image")
	}
	path, err := exec.LookPath("podman")
	if err != nil {
		if os.Getenv("PETSTORE_TEST_REQUIRE_PODMAN") == "1" {
			t.Fatalf("PETSTORE_TEST_REQUIRE_PODMAN=1 but podman is not installed (apt-get install podman runc)")
		}
		t.Skip("SKIPPED LOUDLY: podman is not installed (apt-get install podman runc); the container image was NOT built or run")
	}
	// The key reaches a container through podman's environment (run --env
	// PETSTORE_API_KEYS), never through its arguments.
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PETSTORE_") })
	env = append(env, "PETSTORE_API_KEYS="+petstoretest.Key)
	return &podman{t: t, path: path, global: podmanGlobalFlags(), env: env}
}

// podmanGlobalFlags are the flags podman needs where systemd does not run
// the machine (a CI container, a sandbox): no systemd to manage cgroups,
// so cgroupfs, and runc, the runtime that works without cgroup delegation.
func podmanGlobalFlags() []string {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		return nil
	}
	flags := []string{"--cgroup-manager", "cgroupfs"}
	if _, err := exec.LookPath("runc"); err == nil {
		flags = append(flags, "--runtime", "runc")
	}
	return flags
}

// podmanRunLimits are the flags `podman run` needs where the caller may
// not raise resource limits (no CAP_SYS_RESOURCE, as in a sandbox that
// runs podman as root): rootful podman asks for limits above the caller's
// hard ones, which the runtime then cannot set. The container gets the
// caller's own open-file limit and a process limit it can set.
func podmanRunLimits(t *testing.T) []string {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("reading /proc/self/status: %v", err)
	}
	const capSysResource = 24
	for line := range strings.Lines(string(status)) {
		if hexCaps, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hexCaps), 16, 64)
			if err != nil {
				t.Fatalf("CapEff in /proc/self/status: %v", err)
			}
			if caps&(1<<capSysResource) != 0 {
				return nil
			}
		}
	}
	var nofile, nproc [2]uint64
	for name, limit := range map[string]*[2]uint64{"Max open files": &nofile, "Max processes": &nproc} {
		*limit = processLimit(t, name)
	}
	return []string{
		"--ulimit", fmt.Sprintf("nofile=%d:%d", nofile[0], nofile[1]),
		"--ulimit", fmt.Sprintf("nproc=%d:%d", min(nproc[0], 4096), min(nproc[1], 4096)),
	}
}

// processLimit reads the soft and hard limit called name from
// /proc/self/limits.
func processLimit(t *testing.T, name string) [2]uint64 {
	t.Helper()
	limits, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		t.Fatalf("reading /proc/self/limits: %v", err)
	}
	for line := range strings.Lines(string(limits)) {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest)
			soft, err1 := strconv.ParseUint(f[0], 10, 64)
			hard, err2 := strconv.ParseUint(f[1], 10, 64)
			if err1 != nil || err2 != nil {
				break // "unlimited": podman's own default fits
			}
			return [2]uint64{soft, hard}
		}
	}
	return [2]uint64{1 << 20, 1 << 20}
}

// run runs podman with args and returns its stdout, trimmed; a failure
// fails the test with podman's stderr.
func (p *podman) run(args ...string) string {
	p.t.Helper()
	out, err := p.try(args...)
	if err != nil {
		p.t.Fatalf("podman %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// try runs podman with args and returns its stdout, trimmed, or an error
// with its stderr.
func (p *podman) try(args ...string) (string, error) {
	stdout, stderr, err := p.output(args...)
	if err != nil {
		return "", fmt.Errorf("%w\n%s", err, petstoretest.Redact(stderr))
	}
	return strings.TrimSpace(stdout), nil
}

// output runs podman with args and returns what it wrote on stdout and on
// stderr.
func (p *podman) output(args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), podmanCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.path, slices.Concat(p.global, args)...)
	cmd.Env = p.env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// cleanup removes what a test made, at its end, whatever happened.
func (p *podman) cleanup(args ...string) {
	p.t.Cleanup(func() {
		if _, err := p.try(args...); err != nil {
			p.t.Logf("cleanup: podman %s: %v", strings.Join(args, " "), err)
		}
	})
}

// buildImage runs `make image` with a tag of the test's own and removes the
// image at the end of the test.
func (p *podman) buildImage(tag string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*podmanCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "image", "IMAGE="+tag, "CONTAINER_TOOL="+p.path,
		"PODMAN_FLAGS="+strings.Join(p.global, " "))
	cmd.Env = p.env
	p.cleanup("rmi", "--force", tag)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("make image: %v\n%s", err, out)
	}
}

// randomName is a name no other run of the tests uses.
func randomName(t *testing.T, prefix string) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// `make image` builds an image from scratch of the static binary, the CA
// certificates and a /data owned by the unprivileged user; run with a
// volume, a category created in one container is served by the next on
// the same volume, the process inside is not root, and SIGTERM (podman
// stop) ends it with status 0.
func TestContainerImage(t *testing.T) {
	t.Parallel()
	pm := newPodman(t)
	petstoretest.BinaryPath(t) // compiles every package as make image does, for tests running meanwhile too
	tag := randomName(t, "localhost/petstore-test:")
	pm.buildImage(tag)
	checkImageConfig(t, pm, tag)
	checkImageFiles(t, pm, tag)

	volume := randomName(t, "petstore-test-")
	pm.cleanup("volume", "rm", "--force", volume)
	pm.run("volume", "create", volume)
	client := petstoretest.NewClient(t)

	first := startContainer(t, pm, tag, volume)
	resp, body := petstoretest.Send(t, client, "POST", first.url("/v1/categories"), petstoretest.Key, `{"name":"dog"}`, nil)
	petstoretest.WantStatus(t, "create in the first container", resp, body, http.StatusCreated)
	checkContainerUser(t, pm, first.name)
	first.stop(t)

	second := startContainer(t, pm, tag, volume)
	resp, body = petstoretest.Send(t, client, "GET", second.url("/v1/categories"), petstoretest.Key, "", nil)
	petstoretest.WantStatus(t, "list in the second container", resp, body, http.StatusOK)
	if got, want := string(body), `[{"id":1,"name":"dog"}]`; got != want {
		t.Errorf("list after a new container on the same volume: got %s, want %s", got, want)
	}
	resp, body = petstoretest.Send(t, client, "POST", second.url("/v1/categories"), petstoretest.Key, `{"name":"cat"}`, nil)
	petstoretest.WantStatus(t, "create in the second container", resp, body, http.StatusCreated)
	if got, want := string(body), `{"id":2,"name":"cat"}`; got != want {
		t.Errorf("create after a new container: got %s, want %s", got, want)
	}
	second.stop(t)
}

// checkImageConfig checks what the image declares: the user, the
// environment, the volume, the port, and a size that only a binary and
// certificates make.
func checkImageConfig(t *testing.T, pm *podman, tag string) {
	t.Helper()
	var images []struct {
		Size   int64
		Config struct {
			User         string
			Env          []string
			Volumes      map[string]any
			ExposedPorts map[string]any
			Entrypoint   []string
		}
	}
	out := pm.run("image", "inspect", tag)
	if err := json.Unmarshal([]byte(out), &images); err != nil || len(images) != 1 {
		t.Fatalf("podman image inspect: %d images, %v\n%s", len(images), err, out)
	}
	config := images[0]
	c := config.Config
	if want := fmt.Sprintf("%d:%d", imageUser, imageUser); c.User != want {
		t.Errorf("image user: got %q, want %q", c.User, want)
	}
	for _, want := range []string{"PETSTORE_ADDR=:8080", "PETSTORE_DATA=/data/petstore.jsonl"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("image environment %q: no %s", c.Env, want)
		}
	}
	if _, ok := c.Volumes["/data"]; !ok || len(c.Volumes) != 1 {
		t.Errorf("image volumes: got %v, want /data only", c.Volumes)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("image ports: got %v, want 8080/tcp only", c.ExposedPorts)
	}
	if !slices.Equal(c.Entrypoint, []string{"/petstore"}) {
		t.Errorf("image entrypoint: got %q, want /petstore", c.Entrypoint)
	}
	if const32MiB := int64(32 << 20); config.Size <= 0 || config.Size > const32MiB {
		t.Errorf("image size: got %d bytes, want at most 32 MiB (a binary and CA certificates)", config.Size)
	}
	t.Logf("image size: %d bytes", config.Size)
}

// checkImageFiles reads the image's file system: exactly the binary
// (static: no ELF interpreter), a CA bundle that parses, and /data owned by
// the image's user.
func checkImageFiles(t *testing.T, pm *podman, tag string) {
	t.Helper()
	name := randomName(t, "petstore-test-files-")
	pm.cleanup("rm", "--force", "--volumes", name)
	pm.run("create", "--name", name, tag)
	files := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(strings.NewReader(pm.run("export", name)))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("podman export: %v", err)
		}
		path := "/" + strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		files[path] = h
		if h.Typeflag == tar.TypeReg {
			if contents[path], err = io.ReadAll(tr); err != nil {
				t.Fatalf("podman export: %s: %v", path, err)
			}
		}
	}
	var regular []string
	for path, h := range files {
		if h.Typeflag == tar.TypeReg {
			regular = append(regular, path)
		}
	}
	slices.Sort(regular)
	if want := []string{"/etc/ssl/certs/ca-certificates.crt", "/petstore"}; !slices.Equal(regular, want) {
		t.Errorf("files in the image: got %q, want %q", regular, want)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(contents["/etc/ssl/certs/ca-certificates.crt"]) {
		t.Errorf("/etc/ssl/certs/ca-certificates.crt holds no PEM certificate")
	}
	checkStaticBinary(t, contents["/petstore"])
	if data := files["/data"]; data == nil || data.Typeflag != tar.TypeDir || data.Uid != imageUser || data.Gid != imageUser {
		t.Errorf("/data in the image: got %+v, want a directory owned by %d:%d", data, imageUser, imageUser)
	}
}

// checkStaticBinary checks that binary is an executable that needs no
// dynamic loader: a FROM scratch image has none.
func checkStaticBinary(t *testing.T, binary []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(binary))
	if err != nil {
		t.Fatalf("/petstore in the image: %v", err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("/petstore in the image asks for a dynamic loader: it is not static (CGO_ENABLED=0)")
		}
	}
}

// container is one running container of the image.
type container struct {
	pm   *podman
	name string
	addr string // 127.0.0.1:PORT published for its port 8080
}

func (c *container) url(path string) string { return "http://" + c.addr + path }

// startContainer runs the image with volume on /data, a read-only root
// file system, port 8080 published on 127.0.0.1 only and the API key
// passed through podman's environment (not its arguments), and waits for
// /healthz.
func startContainer(t *testing.T, pm *podman, tag, volume string) *container {
	t.Helper()
	name := randomName(t, "petstore-test-")
	pm.cleanup("rm", "--force", "--volumes", "--time", "0", name)
	args := slices.Concat([]string{"run", "--detach", "--name", name, "--read-only",
		"--publish", "127.0.0.1::8080", "--volume", volume + ":/data", "--env", "PETSTORE_API_KEYS"},
		podmanRunLimits(t), []string{tag})
	pm.run(args...)
	addr := pm.run("port", name, "8080/tcp")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("podman port: got %q, want 127.0.0.1:PORT", addr)
	}
	c := &container{pm: pm, name: name, addr: addr}
	petstoretest.WaitHealthy(t, c.url(""), nil, nil)
	return c
}

// stop stops the container with SIGTERM and checks that petstore exited 0
// and logged no key.
func (c *container) stop(t *testing.T) {
	t.Helper()
	c.pm.run("stop", "--time", strconv.Itoa(int(petstoretest.DefaultGrace/time.Second)+5), c.name)
	if code := c.pm.run("inspect", "--format", "{{.State.ExitCode}}", c.name); code != "0" {
		t.Errorf("exit status after podman stop: got %s, want 0", code)
	}
	// podman logs writes what the container wrote on stderr on its own.
	stdout, stderr, err := c.pm.output("logs", c.name)
	if err != nil {
		t.Fatalf("podman logs: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout+stderr), "\n")
	petstoretest.CheckNoSecrets(t, lines, petstoretest.Key)
	parsed := petstoretest.ParseLogLines(t, lines)
	if petstoretest.FindLog(parsed, "listening", map[string]any{"data": "/data/petstore.jsonl"}) == nil || petstoretest.FindLog(parsed, "stopped", nil) == nil {
		t.Errorf("container log: want a listening line with data /data/petstore.jsonl and a stopped line; got:\n%s", petstoretest.Redact(strings.Join(lines, "\n")))
	}
}

// checkContainerUser reads, from the host, the user and group ids of the
// container's main process: not root on the host, and the image's user
// inside the container (the same id unless podman maps ids, as rootless
// podman does).
func checkContainerUser(t *testing.T, pm *podman, name string) {
	t.Helper()
	proc := filepath.Join("/proc", pm.run("inspect", "--format", "{{.State.Pid}}", name))
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		t.Fatalf("the container's process: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(status)) {
		for field, idMap := range map[string]string{"Uid:": "uid_map", "Gid:": "gid_map"} {
			rest, ok := strings.CutPrefix(line, field)
			if !ok {
				continue
			}
			checked++
			mapping, err := os.ReadFile(filepath.Join(proc, idMap))
			if err != nil {
				t.Fatalf("the container's process: %v", err)
			}
			for _, id := range strings.Fields(rest) { // real, effective, saved, file system
				host, _ := strconv.ParseUint(id, 10, 32)
				inside, ok := idInside(string(mapping), host)
				if host == 0 || !ok || inside != imageUser {
					t.Errorf("the container's process: %s %s on the host (%d inside, mapped: %v), want %d inside and not 0 on the host",
						field, strings.TrimSpace(rest), inside, ok, imageUser)
					break
				}
			}
		}
	}
	if checked != 2 {
		t.Fatalf("the container's process: %d of the Uid and Gid lines in its status", checked)
	}
}

// idInside translates a host id into the id a process sees in its user
// namespace, through the lines "inside outside count" of a uid_map or
// gid_map read from the host.
func idInside(mapping string, host uint64) (uint64, bool) {
	for line := range strings.Lines(mapping) {
		var inside, outside, count uint64
		if _, err := fmt.Sscan(line, &inside, &outside, &count); err == nil && host >= outside && host-outside < count {
			return inside + host - outside, true
		}
	}
	return 0, false
}
