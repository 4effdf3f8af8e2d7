package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"petstore/internal/etcd/etcdtest"
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
