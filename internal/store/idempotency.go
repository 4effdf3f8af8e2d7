package store

import (
	"crypto/sha256"
	"sync"
	"time"

	"petstore/internal/catalog"
)

// requestFingerprint identifies a create by what it asks for once
// validated: the trimmed name and the description, if any, as the first 16
// bytes of a SHA-256. The etcd store still writes it into a key's claim
// only so that claims read the same to older petstores sharing the prefix,
// which tell a retry by it; this version tells a retry by comparing the
// category the key made (catalog.NewCategory.SameAs) and never reads it.
func requestFingerprint(nc catalog.NewCategory) [16]byte {
	var buf [512]byte // the usual request fits: no allocation
	b := append(buf[:0], nc.Name...)
	if nc.HasDescription {
		b = append(b, 0)
		b = append(b, nc.Description...)
	}
	sum := sha256.Sum256(b)
	return [16]byte(sum[:16])
}

// idempotencyTable is the keys a store knows, in memory: those in flight
// and those whose create answered 201 and have not expired, with the id of
// the category each made. It is safe for concurrent use.
//
// It keeps nothing of a key's request: a retry is compared with the
// category its key made (see catalog.NewCategory.SameAs).
//
// Its maps hold no pointer: a key is known by a digest of its scope and
// text, and its entry is a plain value, so that millions of keys (a day of
// busy creates) cost the garbage collector nothing to scan.
//
// It is split in shards by key id, each with its own lock: the creates of
// a batch are answered together, and each settles its key as it returns,
// so one lock would have them queue for it.
type idempotencyTable struct {
	ttl    time.Duration
	now    func() time.Time
	shards [keyShards]keyShard
}

const (
	keyShards  = 32 // how many shards a table has
	sweepEvery = 16 // every sweepEvery-th claim also sweeps another shard
)

// keyShard is the keys of one shard, under its lock.
type keyShard struct {
	mu      sync.Mutex
	entries map[catalog.KeyID]idempotencyEntry
	// expiring lists the done keys in the order they expire: every key
	// lives the same TTL, so that is the order they were done in (replay
	// loads them in file order). Expired ones are dropped from its front
	// by every claim of the shard, and every sweepEvery-th claim of a
	// shard sweeps the others, in turn: key ids are digests, so claims
	// fall on every shard alike, but a client can try keys until they all
	// fall on one; either way memory follows the keys made within the TTL.
	expiring []expiringKey
	next     int // expiring[:next] are dropped already
	// claims counts the shard's claims, and sweep is the shard its next
	// sweepEvery-th sweeps: counted under the lock taken anyway, rather
	// than in one counter whose cache line every claim would move.
	claims, sweep int
	_             [64]byte // a shard's lock is not on its neighbour's cache line
}

func (t *idempotencyTable) shard(id catalog.KeyID) *keyShard {
	return &t.shards[id[0]%keyShards]
}

type expiringKey struct {
	id      catalog.KeyID
	expires int64
}

// idempotencyEntry is what the table knows of a key: 16 bytes, beside the
// 16 of its id.
type idempotencyEntry struct {
	id      int64 // of the category its create made; 0 while in flight
	expires int64 // Unix nanoseconds; 0 while in flight
}

// inFlight reports whether the key's create is under way. A key done has
// an expiry, after now when it was done or loaded: never 0.
func (e idempotencyEntry) inFlight() bool { return e.expires == 0 }

// newIdempotencyTable returns an empty table of keys that live ttl (0:
// DefaultIdempotencyTTL) on the clock now (nil: time.Now).
func newIdempotencyTable(ttl time.Duration, now func() time.Time) *idempotencyTable {
	if now == nil {
		now = time.Now
	}
	if ttl <= 0 {
		ttl = DefaultIdempotencyTTL
	}
	t := &idempotencyTable{ttl: ttl, now: now}
	for i := range t.shards {
		t.shards[i].entries = make(map[catalog.KeyID]idempotencyEntry)
	}
	return t
}

// claimOutcome is what claim found.
type claimOutcome int

const (
	claimNew      claimOutcome = iota // the key is new: this create goes ahead
	claimDone                         // done before: the id is its category's (see catalog.NewCategory.SameAs)
	claimInFlight                     // a create with the key is under way
)

// claim looks up k: a new key is marked in flight, to be settled by done or
// release.
func (t *idempotencyTable) claim(k *catalog.IdempotencyKey) (claimOutcome, int64) {
	now := t.now().UnixNano()
	sh := t.shard(k.ID)
	sh.mu.Lock()
	sh.dropExpired(now)
	outcome, id := claimNew, int64(0)
	e, ok := sh.entries[k.ID]
	switch {
	case !ok, !e.inFlight() && e.expires <= now: // expired: as if never seen
		sh.entries[k.ID] = idempotencyEntry{} // in flight
	case e.inFlight():
		outcome = claimInFlight
	default:
		outcome, id = claimDone, e.id
	}
	var other *keyShard
	if sh.claims++; sh.claims%sweepEvery == 0 {
		other = &t.shards[sh.sweep]
		sh.sweep = (sh.sweep + 1) % keyShards
	}
	sh.mu.Unlock()
	if other != nil && other != sh { // one lock at a time: no order to keep
		other.mu.Lock()
		other.dropExpired(now)
		other.mu.Unlock()
	}
	return outcome, id
}

// done records that the create that claimed k made category id at created.
func (t *idempotencyTable) done(k *catalog.IdempotencyKey, id int64, created time.Time) {
	t.doneID(k.ID, id, created)
}

// doneID is done for a key known by its table id (as the journal keeps it).
func (t *idempotencyTable) doneID(s catalog.KeyID, id int64, created time.Time) {
	expires := created.Add(t.ttl).UnixNano()
	sh := t.shard(s)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.entries[s] = idempotencyEntry{id: id, expires: expires}
	sh.expiring = append(sh.expiring, expiringKey{s, expires})
}

// dropExpired forgets the keys expired at now, from the front of
// expiring. Callers hold mu.
func (sh *keyShard) dropExpired(now int64) {
	for sh.next < len(sh.expiring) && sh.expiring[sh.next].expires <= now {
		x := sh.expiring[sh.next]
		// The key may have been done again since (it expired and was
		// claimed anew): only this expiry's entry goes.
		if e, ok := sh.entries[x.id]; ok && !e.inFlight() && e.expires == x.expires {
			delete(sh.entries, x.id)
		}
		sh.expiring[sh.next] = expiringKey{}
		sh.next++
	}
	if sh.next > 1024 && sh.next > len(sh.expiring)/2 {
		sh.expiring = append(sh.expiring[:0], sh.expiring[sh.next:]...)
		sh.next = 0
	}
}

// release forgets a claim whose create did not answer 201: a retry is
// processed afresh.
func (t *idempotencyTable) release(k *catalog.IdempotencyKey) {
	sh := t.shard(k.ID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.entries[k.ID]; ok && e.inFlight() {
		delete(sh.entries, k.ID)
	}
}

// load adds a key found in the journal, unless it has expired, or was
// made more than a TTL in the future: a damaged time, whose expiry could
// be past what Unix nanoseconds hold (or a clock set back by a TTL).
func (t *idempotencyTable) load(s catalog.KeyID, id int64, created time.Time) {
	now := t.now()
	if created.Add(t.ttl).After(now) && !created.After(now.Add(t.ttl)) {
		t.doneID(s, id, created)
	}
}

// size returns how many keys the table holds, in flight or done, and how
// many expiry times it still keeps.
func (t *idempotencyTable) size() (keys, expiring int) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		keys += len(sh.entries)
		expiring += len(sh.expiring) - sh.next
		sh.mu.Unlock()
	}
	return keys, expiring
}
