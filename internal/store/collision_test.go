package store

import (
	"strconv"
	"strings"
	"testing"
)

// Many collisions are summed up after the first warnings, and all the
// categories are kept.
func TestReplayCollisionWarningsAreBounded(t *testing.T) {
	t.Parallel()
	records := []string{`{"id":1,"name":"dog"}`}
	const collisions = maxCollisionWarnings + 5
	for i := range collisions {
		name := []byte("dog")
		for b := range name { // a different spelling each time: dOg, DoG, …
			if (i+1)>>b&1 == 1 {
				name[b] -= 'a' - 'A'
			}
		}
		records = append(records, `{"id":`+strconv.Itoa(i+2)+`,"name":"`+string(name)+`"}`)
	}
	var logs lockedBuffer
	s := openTestStore(t, writeJournal(t, records...), withStoreLog(&logs))
	if got := strings.Count(logs.String(), `"level":"WARN"`); got != maxCollisionWarnings+1 {
		t.Errorf("got %d warnings, want %d and a summary; logs:\n%s", got, maxCollisionWarnings, &logs)
	}
	if !strings.Contains(logs.String(), `"more":5`) {
		t.Errorf("no summary of the 5 more collisions; logs:\n%s", &logs)
	}
	if n := snapshotOf(t, s).Len(); n != len(records) {
		t.Errorf("categories: got %d, want %d", n, len(records))
	}
}
