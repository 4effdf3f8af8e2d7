package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"petstore/internal/store"
)

// The -export and -import commands: a store's categories out as a journal,
// and a journal into an empty etcd prefix (docs/data.md, "Export and
// import").

// exportToFile is petstore -export FILE: the export goes into a temporary
// file beside path, is synced, then renamed over path. A failed export
// leaves no file, partial or empty, and a file that was there as it was.
func exportToFile(cfg config, log *slog.Logger, path string, stderr io.Writer) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("-export: %w", err)
	}
	defer os.Remove(tmp.Name()) // after a rename, there is nothing to remove
	err = exportCategories(cfg, log, tmp, stderr)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("%w; %s was not written", err, path)
	}
	fmt.Fprintf(stderr, "petstore: exported to %s\n", path)
	return nil
}

// exportToStdout is petstore -export, to stdout. When stdout is a file (a
// shell's `> FILE` or `>> FILE`) and the export fails, the file is cut back
// to the size it had; one that was empty (made by the shell for it) is
// removed, so that a failed export leaves no empty backup that looks like
// one.
func exportToStdout(cfg config, log *slog.Logger, stdout, stderr io.Writer) error {
	f, _ := stdout.(*os.File)
	start := int64(-1) // not a regular file
	if info, err := statOf(f); err == nil && info.Mode().IsRegular() {
		start = info.Size()
	}
	err := exportCategories(cfg, log, stdout, stderr)
	if err == nil || start < 0 {
		return err
	}
	if f.Truncate(start) != nil || start > 0 {
		return err
	}
	if path, removed := removeEmpty(f); removed {
		return fmt.Errorf("%w; %s, which was empty, was removed", err, path)
	}
	return err
}

// statOf is f.Stat, for a nil f too.
func statOf(f *os.File) (os.FileInfo, error) {
	if f == nil {
		return nil, os.ErrInvalid
	}
	return f.Stat()
}

// removeEmpty removes the empty regular file f when its path can be told
// for sure (Linux's /proc/self/fd) and reports the path.
func removeEmpty(f *os.File) (string, bool) {
	info, err := f.Stat()
	if err != nil || info.Size() != 0 {
		return "", false
	}
	path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		return "", false
	}
	if named, err := os.Stat(path); err != nil || !os.SameFile(named, info) || os.Remove(path) != nil {
		return "", false
	}
	return path, true
}

// exportCategories writes the categories of the store PETSTORE_DATA names
// to w in the journal format (petstore -export): a file a journal-backed
// petstore can start from. It says on stderr which store it reads.
func exportCategories(cfg config, log *slog.Logger, w, stderr io.Writer) error {
	if !store.IsEtcdURL(cfg.dataPath) && cfg.dataPath != store.MemoryPath {
		// Opening a journal creates a missing one: export must not.
		if _, err := os.Stat(cfg.dataPath); err != nil {
			return fmt.Errorf("PETSTORE_DATA: %w", err)
		}
	}
	fmt.Fprintf(stderr, "petstore: exporting from %s\n", exportSource(cfg))
	s, err := openStore(cfg.dataPath, cfg.etcd, store.Options{Log: log, ReadOnly: true})
	if err != nil {
		return storeError(err)
	}
	defer s.Close()
	snap, err := s.List(context.Background())
	if err != nil {
		return err
	}
	return store.Export(w, snap)
}

// exportSource names the store PETSTORE_DATA configures, for a person:
// the journal's path, :memory:, or the etcd endpoints, user and prefix
// (never the password).
func exportSource(cfg config) string {
	switch {
	case cfg.dataPath == store.MemoryPath:
		return store.MemoryPath
	case store.IsEtcdURL(cfg.dataPath):
		return cfg.etcd.String()
	}
	return "journal " + cfg.dataPath
}

// importJournal copies the journal at path into the empty prefix that
// PETSTORE_DATA names, keeping ids (petstore -import). It refuses a prefix
// that holds any key: merging two id sequences has no right answer.
func importJournal(cfg config, log *slog.Logger, path string, stderr io.Writer) error {
	if !store.IsEtcdURL(cfg.dataPath) {
		return errors.New("PETSTORE_DATA: -import copies a journal into etcd; set PETSTORE_DATA=etcd://HOST:PORT[,…][/PREFIX]")
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("-import: %w", err)
	}
	// Opened as a petstore would (its checks, and its lock, so that no
	// petstore appends to it while it is copied), but only read.
	js, err := store.OpenJournal(path, store.Options{Log: log, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("-import %s: %w", path, err)
	}
	defer js.Close()
	snap, _ := js.List(context.Background())
	root, err := store.Import(snap, cfg.etcd)
	if err != nil {
		return fmt.Errorf("-import: %w", storeError(err))
	}
	fmt.Fprintf(stderr, "petstore: imported %d categories from %s into %s\n", snap.Len(), path, root)
	return nil
}
