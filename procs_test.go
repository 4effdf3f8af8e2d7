package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"petstore/internal/logsink"
	"petstore/internal/petstoretest"
	"petstore/internal/store"
)

// The real binary on one CPU: with a journal, the first create raises
// GOMAXPROCS; with :memory:, or with GOMAXPROCS set explicitly, nothing does.
func TestRunBoostsProcsForJournalWrites(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset is not installed")
	}
	dir := t.TempDir()
	tests := []struct {
		name        string
		env         map[string]string
		wantBoosted bool
	}{
		{"journal", map[string]string{"PETSTORE_DATA": filepath.Join(dir, "a.jsonl")}, true},
		{"memory", map[string]string{"PETSTORE_DATA": store.MemoryPath}, false},
		{"journal with GOMAXPROCS=1", map[string]string{"PETSTORE_DATA": filepath.Join(dir, "b.jsonl"), "GOMAXPROCS": "1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := petstoretest.Start(t, tt.env, petstoretest.WithPrefix(taskset, "-c", "0"))
			resp, body := petstoretest.Send(t, petstoretest.NewClient(t), "POST", p.URL("/v1/categories"), petstoretest.Key, `{"name":"dog"}`, nil)
			petstoretest.WantStatus(t, "create", resp, body, http.StatusCreated)
			// The boost is logged before the create's 201; the access line
			// of the create follows within the log's flush delay.
			if p.WaitLog(10*logsink.FlushDelay, func(l petstoretest.LogLine) bool { return l["msg"] == "request" }) == nil {
				t.Fatalf("no access line for the create")
			}
			boosted := p.WaitLog(0, func(l petstoretest.LogLine) bool {
				msg, _ := l["msg"].(string)
				return strings.HasPrefix(msg, "journal writes: GOMAXPROCS raised") && l["gomaxprocs"] == float64(2)
			}) != nil
			if boosted != tt.wantBoosted {
				t.Errorf("GOMAXPROCS raised: got %v, want %v", boosted, tt.wantBoosted)
			}
		})
	}
}
