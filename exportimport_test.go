package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"petstore/internal/etcd/etcdtest"
	"petstore/internal/petstoretest"
)

// -export says on stderr which store it reads, so that an export of the
// wrong store (a PETSTORE_DATA left unset) is seen; it never shows the etcd
// password.
func TestExportSaysWhichStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	journal := filepath.Join(dir, "petstore.jsonl")
	if err := os.WriteFile(journal, []byte(`{"format":"petstore-categories","version":1}`+"\n"+`{"id":1,"name":"dog"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, srv := etcdtest.NewFake(t, "3.4")
	f.EnableAuth("s3cret")
	endpoint := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"journal", map[string]string{"PETSTORE_DATA": journal}, "petstore: exporting from journal " + journal + "\n"},
		{"memory", map[string]string{"PETSTORE_DATA": ":memory:"}, "petstore: exporting from :memory:\n"},
		{"etcd", map[string]string{"PETSTORE_DATA": "etcd://" + endpoint + "/p", "PETSTORE_ETCD_USER": "svc", "PETSTORE_ETCD_PASSWORD_FILE": pwFile},
			"petstore: exporting from etcd http://" + endpoint + " as svc, prefix /p/\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, err := runCommand(t, tc.env, "-export")
			if err != nil {
				t.Fatalf("-export: %v; stderr %s", err, stderr)
			}
			if !strings.HasPrefix(stderr, tc.want) || strings.Contains(stderr, "s3cret") {
				t.Errorf("stderr: got %q, want it to start with %q and show no password", stderr, tc.want)
			}
		})
	}
}

// petstore -export reads a journal and changes nothing in it: a version-1
// header stays version 1 (an older petstore can still read the file), a
// torn last line stays where it is.
func TestExportLeavesTheJournalAlone(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	content := `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n" + `{"id":2,"na`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runCommand(t, map[string]string{"PETSTORE_DATA": path, "PETSTORE_API_KEYS": e2eKey}, "-export")
	if err != nil {
		t.Fatalf("-export: %v", err)
	}
	// An export holds no keys: it says version 1, which every petstore reads.
	if want := `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n"; stdout != want {
		t.Errorf("exported: %q, want %q", stdout, want)
	}
	if data, _ := os.ReadFile(path); string(data) != content {
		t.Errorf("the journal changed: %q", data)
	}
	if _, err := os.Stat(path + ".torn"); err == nil {
		t.Errorf("-export wrote a .torn file")
	}
}

// A failed -export leaves no file behind, partial or empty: -export FILE
// writes nothing, a shell's `> FILE` is removed again, `>> FILE` and an
// existing FILE are left as they were. Once the export can run, both forms
// write the whole export. The journal's lock, held by a running petstore,
// makes it fail.
func TestFailedExportLeavesNoFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	journal := filepath.Join(dir, "cats.jsonl")
	svc := startRun(t, baseEnv(journal))
	mustCreateVia(t, http.DefaultClient, svc.url(""), "dog", 1)
	bin := petstoretest.BinaryPath(t)
	sh := func(script string) (string, error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PETSTORE_DATA=" + journal, "PETSTORE=" + bin}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	files := func() []string {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	const kept = "an older backup\n"
	if err := os.WriteFile(filepath.Join(dir, "old.jsonl"), []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, script := range []string{`"$PETSTORE" -export new.jsonl`, `"$PETSTORE" -export > new.jsonl`, `"$PETSTORE" -export old.jsonl`, `"$PETSTORE" -export >> old.jsonl`} {
		out, err := sh(script)
		if err == nil || !strings.Contains(out, "in use by another petstore") {
			t.Errorf("%s while petstore runs: %v, %s; want it refused", script, err, out)
		}
		if got := files(); !slices.Equal(got, []string{"cats.jsonl", "old.jsonl"}) {
			t.Errorf("%s while petstore runs left %v; want only cats.jsonl and old.jsonl", script, got)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "old.jsonl")); string(b) != kept {
			t.Errorf("%s while petstore runs: old.jsonl holds %q, want it as it was", script, b)
		}
	}
	if err := svc.stop(); err != nil {
		t.Fatal(err)
	}
	const want = `{"format":"petstore-categories","version":1}` + "\n" + `{"id":1,"name":"dog"}` + "\n"
	for _, script := range []string{`"$PETSTORE" -export new.jsonl`, `"$PETSTORE" -export > new.jsonl`, `"$PETSTORE" -export old.jsonl`} {
		if out, err := sh(script); err != nil {
			t.Fatalf("%s: %v, %s", script, err, out)
		}
	}
	for _, name := range []string{"new.jsonl", "old.jsonl"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s after the exports: %q, want %q", name, b, want)
		}
	}
	if got := files(); !slices.Equal(got, []string{"cats.jsonl", "new.jsonl", "old.jsonl"}) {
		t.Errorf("the directory after the exports: %v", got)
	}
}
