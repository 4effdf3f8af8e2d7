package storetest

import (
	"testing"

	"petstore/internal/journal"
)

func TestJournalHeaderIsTheCurrentVersion(t *testing.T) {
	if got := journal.Header(journal.Version); got != JournalHeader {
		t.Errorf("journal.Header(journal.Version) = %s, want %s", got, JournalHeader)
	}
}
