package store

import (
	"encoding/json"
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

// Replay keeps every name an earlier version accepted, those the name rules
// now refuse (format and private-use characters, U+2800, joiners between
// Latin letters) and those that now fold alike (a no-break space and a
// space): both of such a pair are kept, with a warning.
func TestReplayKeepsNamesTheRulesNowRefuse(t *testing.T) {
	t.Parallel()
	names := []string{"do\u200dg", "d\u200cog", "dog\u2800", "\u2800dog", "dog\ufff9", "dog\u0600",
		"dog\u070f", "dog\U000110bd", "dog\ue000", "do g", "do\u00a0g", "do\u2009g"}
	records := make([]string, len(names))
	for i, name := range names {
		quoted, _ := json.Marshal(name)
		records[i] = `{"id":` + strconv.Itoa(i+1) + `,"name":` + string(quoted) + `}`
	}
	var logs lockedBuffer
	s := openTestStore(t, writeJournal(t, records...), withStoreLog(&logs))
	snap := snapshotOf(t, s)
	for i, name := range names {
		if got, ok := snap.NameOf(int64(i + 1)); !ok || got != name {
			t.Errorf("category %d after replay: %+q, want %+q", i+1, got, name)
		}
	}
	if got := strings.Count(logs.String(), `"level":"WARN"`); got != 2 {
		t.Errorf("got %d warnings, want 2 (the no-break and the thin space collide with the space); logs:\n%s", got, &logs)
	}
}
