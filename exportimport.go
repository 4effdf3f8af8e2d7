package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"petstore/internal/outfile"
	"petstore/internal/store"
)

// The -export and -import commands: a store's categories out as a journal,
// and a journal into an empty etcd prefix (docs/data.md, "Export and
// import").

// exportToFile is petstore -export FILE: the whole export or no file.
func exportToFile(cfg config, log *slog.Logger, path string, stderr io.Writer) error {
	if err := outfile.WriteFile(path, func(w io.Writer) error { return exportCategories(cfg, log, w, stderr) }); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "petstore: exported to %s\n", path)
	return nil
}

// exportToStdout is petstore -export, to stdout: a file a shell redirected
// it to is cut back when the export fails (see outfile.Stdout).
func exportToStdout(cfg config, log *slog.Logger, stdout, stderr io.Writer) error {
	return outfile.Stdout(stdout, stderr, func(w io.Writer) error { return exportCategories(cfg, log, w, stderr) })
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
