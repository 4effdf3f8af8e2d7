package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/testkit"
)

// scopeOf is the scope of the Idempotency-Keys sent with API key apiKey.
func scopeOf(apiKey string) [sha256.Size]byte { return sha256.Sum256([]byte(apiKey)) }

// testScope is the scope of the tests' Idempotency-Keys.
var testScope = scopeOf("test-api-key")

// keyedCreate creates a category named name in s with Idempotency-Key
// key.
func keyedCreate(s creator, key, name string) (Created, error) {
	return s.Create(context.Background(), catalog.NewCategory{Name: name, Key: catalog.NewIdempotencyKey(testScope, key)})
}

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestIdempotencyTable(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	tab := newIdempotencyTable(time.Hour, clock.Now)
	k := *catalog.NewIdempotencyKey(scopeOf("aaaa0000"), "k1")
	if got, _ := tab.claim(&k); got != claimNew {
		t.Fatalf("first claim: got %v, want new", got)
	}
	if got, _ := tab.claim(&k); got != claimInFlight {
		t.Fatalf("claim while in flight: got %v", got)
	}
	tab.release(&k)
	if got, _ := tab.claim(&k); got != claimNew {
		t.Fatalf("claim after a release: got %v, want new (a failed create stores nothing)", got)
	}
	tab.done(&k, 7, clock.Now())
	if got, id := tab.claim(&k); got != claimDone || id != 7 {
		t.Fatalf("a key done: got %v %d, want done, category 7", got, id)
	}
	otherScope := catalog.NewIdempotencyKey(scopeOf("bbbb1111"), k.Text)
	if got, _ := tab.claim(otherScope); got != claimNew {
		t.Fatalf("same key from another API key: got %v, want new", got)
	}
	clock.Advance(time.Hour - time.Nanosecond)
	if got, _ := tab.claim(&k); got != claimDone {
		t.Fatalf("just before expiry: got %v, want done", got)
	}
	clock.Advance(time.Nanosecond)
	if got, _ := tab.claim(&k); got != claimNew {
		t.Fatalf("after expiry: got %v, want new", got)
	}
	// The claim dropped the expired entry; what is left: otherScope's
	// claim and k's new one, both in flight.
	if n, _ := tab.size(); n != 2 {
		t.Fatalf("keys after expiry: %d, want 2", n)
	}
	old := catalog.NewIdempotencyKey(scopeOf("cccc2222"), "old")
	tab.load(old.ID, 3, clock.Now().Add(-2*time.Hour))
	if got, _ := tab.claim(catalog.NewIdempotencyKey(scopeOf("cccc2222"), "old")); got != claimNew {
		t.Fatalf("a key loaded already expired: got %v, want new", got)
	}
	// A key made more than a TTL ahead of the clock is a damaged time
	// (in the year 3000, its expiry in Unix nanoseconds would overflow):
	// not loaded, rather than kept for ever or taken for one in flight.
	for _, created := range []time.Time{clock.Now().Add(time.Hour + time.Second), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		future := catalog.NewIdempotencyKey(scopeOf("cccc2222"), "future "+created.String())
		tab.load(future.ID, 4, created)
		if got, _ := tab.claim(future); got != claimNew {
			t.Errorf("a key loaded from %v: got %v, want new", created, got)
		}
	}
	soon := catalog.NewIdempotencyKey(scopeOf("cccc2222"), "soon")
	tab.load(soon.ID, 5, clock.Now().Add(time.Minute)) // a clock set back a little
	if got, id := tab.claim(soon); got != claimDone || id != 5 {
		t.Errorf("a key loaded from a minute ahead: got %v %d, want done, category 5", got, id)
	}
}

// A shard's expiry queue gives back its room once most of it has expired.
func TestIdempotencyShardCompacts(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	tab := newIdempotencyTable(time.Hour, clock.Now)
	var id catalog.KeyID // all in the shard of id[0] == 0
	for i := range 3000 {
		id[1], id[2] = byte(i), byte(i>>8)
		tab.load(id, int64(i+1), clock.Now())
		if i == 1999 {
			clock.Advance(time.Minute) // the last 1000 expire a minute later
		}
	}
	sh := tab.shard(id)
	clock.Advance(time.Hour - 30*time.Second) // between the two expiries
	id[1], id[2] = 0xff, 0xff
	if got, _ := tab.claim(&catalog.IdempotencyKey{ID: id}); got != claimNew {
		t.Fatalf("claim: got %v, want new", got)
	}
	if n, queued := tab.size(); n != 1001 || queued != 1000 {
		t.Errorf("after 2000 of 3000 expired: %d keys (%d queued), want 1001 (1000)", n, queued)
	}
	if len(sh.expiring) != 1000 || sh.next != 0 {
		t.Errorf("expiry queue: %d long, %d dropped at its front; want 1000 and 0 (compacted)", len(sh.expiring), sh.next)
	}
}

// Keys whose claims all fall on one shard (a client can try keys until
// they do) do not keep the expired keys of the other shards in memory:
// claims sweep every shard in turn.
func TestIdempotencyKeysLeaveOtherShards(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	tab := newIdempotencyTable(time.Hour, clock.Now)
	var id catalog.KeyID
	id[0] = 5
	for i := range 100 {
		id[1] = byte(i)
		tab.load(id, int64(i+1), clock.Now())
	}
	clock.Advance(2 * time.Hour)
	id[0] = 0 // every claim on shard 0
	claims := keyShards * sweepEvery
	for i := range claims {
		id[1], id[2] = byte(i), byte(i>>8)
		if got, _ := tab.claim(&catalog.IdempotencyKey{ID: id}); got != claimNew {
			t.Fatalf("claim %d: got %v, want new", i, got)
		}
	}
	if n, _ := tab.size(); n != claims {
		t.Errorf("keys after %d claims on another shard: got %d, want %d (the expired ones of shard 5 gone)", claims, n, claims)
	}
}

// Keys whose creates are older than the TTL are not loaded when the
// journal is replayed (the HTTP side of expiry is tested in package main).
func TestIdempotencyKeysExpireOnReplay(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	path := filepath.Join(t.TempDir(), "cats.jsonl")
	withClock := func(o *Options) { o.Now, o.IdempotencyTTL = clock.Now, time.Hour }
	s := openTestStore(t, path, withClock)
	for _, k := range []string{"early", "late"} {
		if _, err := keyedCreate(s, k, k); err != nil {
			t.Fatalf("create %s: %v", k, err)
		}
		clock.Advance(30 * time.Minute)
	}
	s.Close()
	s2 := openTestStore(t, path, withClock)
	if n, _ := s2.keys.size(); n != 1 {
		t.Errorf("keys loaded 30 and 60 minutes after their creates: %d, want 1 (late)", n)
	}
	clock.Advance(time.Hour)
	s2.Close()
	s3 := openTestStore(t, path, withClock)
	if n, _ := s3.keys.size(); n != 0 {
		t.Errorf("keys loaded from a journal whose keys have all expired: %d, want 0", n)
	}
}

// Expired keys leave memory as new creates come, without any sweep called
// by hand: memory follows the keys made within the TTL. A claim sweeps its
// own shard, so creates whose keys fall on every shard reach them all.
func TestIdempotencyKeysLeaveMemory(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock()
	s := NewMemory(Options{Now: clock.Now, IdempotencyTTL: time.Hour})
	for i := range 3000 {
		if _, err := keyedCreate(s, fmt.Sprintf("k%d", i), fmt.Sprintf("n%d", i)); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		clock.Advance(time.Second)
	}
	if n, queued := s.keyed.keys.size(); n != 3000 || queued != 3000 {
		t.Fatalf("keys within the TTL: %d (expiry queue %d), want 3000", n, queued)
	}
	clock.Advance(time.Hour)
	scope := testScope
	late := 0
	for hit := map[*keyShard]bool{}; len(hit) < keyShards; late++ {
		if late == 1 {
			if n, _ := s.keyed.keys.size(); n > 3000-3000/keyShards/2 {
				t.Errorf("keys after the TTL and one create: %d, want the expired ones of its shard gone", n)
			}
		}
		key := fmt.Sprintf("late%d", late)
		if _, err := keyedCreate(s, key, fmt.Sprintf("late%d", late)); err != nil {
			t.Fatalf("late create %d: %v", late, err)
		}
		hit[s.keyed.keys.shard(catalog.NewIdempotencyKey(scope, key).ID)] = true
		if late > 10000 {
			t.Fatalf("keys of %d creates fell on %d shards only", late, len(hit))
		}
	}
	if n, queued := s.keyed.keys.size(); n != late || queued != late {
		t.Errorf("keys after the TTL: %d (expiry queue %d), want %d (the late ones)", n, queued, late)
	}
}

// BenchmarkIdempotencyKeyMemory measures the heap one stored key takes in
// the table (a 36-character UUID and its scope): the
// memory keys hold is this times the keys created within the TTL.
//
//	go test -run '^$' -bench BenchmarkIdempotencyKeyMemory ./internal/store
func BenchmarkIdempotencyKeyMemory(b *testing.B) {
	const n = 100_000
	var perKey float64
	for range b.N {
		before := liveHeap()
		tab := newIdempotencyTable(time.Hour, nil)
		now := time.Now()
		for i := range n {
			k := catalog.NewIdempotencyKey(scopeOf("9f86d081"), fmt.Sprintf("8e03978e-40d5-43e8-bc93-%012d", i))
			tab.claim(k)
			tab.done(k, int64(i+1), now)
		}
		perKey = float64(liveHeap()-before) / n
		runtime.KeepAlive(tab)
	}
	b.ReportMetric(perKey, "B/key")
}

// Idempotency-Keys are scoped by the whole SHA-256 of the API key: two API
// keys whose digests share the first 4 bytes (the 8-hex fingerprint that
// logs show, which another client could match by trying keys) share no
// Idempotency-Key: not in the table, not in the journal's ids, not in
// etcd's keys.
func TestIdempotencyScopeIsTheWholeDigest(t *testing.T) {
	t.Parallel()
	a := testScope
	b := a
	b[len(b)-1] ^= 1
	if [4]byte(a[:4]) != [4]byte(b[:4]) { // what logs show of an API key
		t.Fatalf("the two scopes must share their fingerprint")
	}
	ka, kb := catalog.NewIdempotencyKey(a, "same-key"), catalog.NewIdempotencyKey(b, "same-key")
	if ka.ID == kb.ID {
		t.Errorf("table and journal id: the same for two API keys of one fingerprint")
	}
	tab := newIdempotencyTable(time.Hour, nil)
	if got, _ := tab.claim(ka); got != claimNew {
		t.Fatalf("first claim: got %v, want new", got)
	}
	tab.done(ka, 1, time.Now())
	if got, id := tab.claim(kb); got != claimNew {
		t.Errorf("the other API key's claim of the same key: got %v (category %d), want new", got, id)
	}
	keys := newEtcdKeys("petstore")
	if ea, eb := keys.idempotencyKey(ka), keys.idempotencyKey(kb); bytes.Equal(ea, eb) {
		t.Errorf("etcd key: %s for both API keys", ea)
	}
}
