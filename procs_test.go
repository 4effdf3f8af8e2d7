package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// On one CPU, petstore with a journal raises GOMAXPROCS to 2 (so that an
// fsync cannot stall requests), unless GOMAXPROCS is set explicitly; without
// a journal it leaves it alone. The binary runs under taskset -c 0.
func TestJournalRaisesGOMAXPROCSOnOneCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset is not installed")
	}
	bin := buildPetstore(t)
	dir := t.TempDir()
	tests := []struct {
		name       string
		env        []string
		wantRaised bool
	}{
		{"journal", []string{"PETSTORE_DATA=" + filepath.Join(dir, "a.jsonl")}, true},
		{"memory", []string{"PETSTORE_DATA=" + memoryPath}, false},
		{"journal with GOMAXPROCS=1", []string{"PETSTORE_DATA=" + filepath.Join(dir, "b.jsonl"), "GOMAXPROCS=1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, taskset, "-c", "0", bin)
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
			cmd.Env = append(cmd.Env, "PETSTORE_ADDR=127.0.0.1:0", "PETSTORE_API_KEYS="+crashKey)
			cmd.Env = append(cmd.Env, tt.env...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Kill()
				cmd.Wait()
			}()
			raised, listening := false, false
			sc := bufio.NewScanner(stderr)
			for !listening && sc.Scan() {
				var line struct {
					Msg        string `json:"msg"`
					GOMAXPROCS int    `json:"gomaxprocs"`
				}
				if json.Unmarshal(sc.Bytes(), &line) != nil {
					continue
				}
				switch line.Msg {
				case "raised GOMAXPROCS so that journal fsyncs do not stall requests":
					raised = line.GOMAXPROCS == 2
				case "listening":
					listening = true
				}
			}
			if !listening {
				t.Fatalf("petstore did not start: %v", sc.Err())
			}
			if raised != tt.wantRaised {
				t.Errorf("GOMAXPROCS raised to 2: got %v, want %v", raised, tt.wantRaised)
			}
		})
	}
}
