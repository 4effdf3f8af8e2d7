package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"petstore/internal/catalog"

	"petstore/internal/etcd"
	"petstore/internal/textcut"
)

// The etcd store's cache: the categories read at start, kept current by a
// watch, and the records it refuses to serve.

// counterReading is the counter as read from etcd at a time.
type counterReading struct {
	value int64
	at    time.Time
}

func (s *Etcd) noteCounter(v int64) {
	s.lastCounter.Store(&counterReading{value: v, at: time.Now()})
}

// Bounds of the ids a Get asks etcd for. The probe reads the counter every
// etcdProbeEvery; while the last reading is at most etcdCounterFresh old, an
// id more than etcdIDLead above it (or above the cache's last id) cannot
// exist yet. Creates that succeed one after another form a chain: each
// txn compares the counter value the one before it wrote, so its sender
// must have seen that txn committed, and no two commit at once. A commit
// takes a quorum's fsync and a network round trip: about 1.6 ms on cloud
// SSDs (etcd's published figure for one sequential client), rarely under
// 0.5 ms on any hardware. At 2000 txns a second of etcdMaxBatch creates
// each, etcdCounterFresh holds 240,000 new ids: any id a 201 can have
// handed out is below the bound, so a Location can still be followed on
// any instance at once, and only ids that near the counter cost a read.
const (
	etcdCounterFresh = 3 * time.Second
	etcdMaxTxnRate   = 2000 // successful create txns a second, cluster-wide
	etcdIDLead       = etcdMaxBatch * etcdMaxTxnRate * int64(etcdCounterFresh/time.Second)
)

// idCeiling returns the greatest id that may exist now.
func (s *Etcd) idCeiling() int64 {
	r := s.lastCounter.Load()
	if r == nil || time.Since(r.at) > etcdCounterFresh {
		return math.MaxInt64
	}
	base := max(r.value, s.idx.Snapshot().LastID())
	if base > math.MaxInt64-etcdIDLead {
		return math.MaxInt64
	}
	return base + etcdIDLead
}

// maxRecordBytes bounds a category record as etcd holds it. The largest
// valid one, 1100 code points of name and description each written as a
// 12-byte escaped surrogate pair, is about 13.3 KB.
const maxRecordBytes = 16 << 10

// record returns the category kv holds if petstore may serve it: a record
// journal replay accepts, within the rules every version's requests kept
// to, whose id is its key's. Anything else was put there by another writer.
// Every version stored names trimmed, not empty and without control
// characters (C0, DEL, C1); the first accepted bidirectional controls in
// names, and descriptions were free text until later, so a journal of
// then, imported, holds them: they are served.
func (s *Etcd) record(kv etcd.KV) (catalog.Category, error) {
	id, ok := s.keys.idOf(kv.Key)
	if !ok {
		return catalog.Category{}, errors.New("the key is not categories/ and an id of 19 digits")
	}
	if len(kv.Value) > maxRecordBytes {
		return catalog.Category{}, fmt.Errorf("%d bytes, more than a category takes", len(kv.Value))
	}
	rec, err := catalog.ParseRecord(kv.Value)
	c := rec.Category
	switch {
	case err != nil:
		return catalog.Category{}, err
	case c.ID != id:
		return catalog.Category{}, fmt.Errorf("its id %d is not its key's", c.ID)
	case utf8.RuneCountInString(c.Name) > catalog.MaxNameLen:
		return catalog.Category{}, fmt.Errorf("its name is longer than %d characters", catalog.MaxNameLen)
	case utf8.RuneCountInString(c.Description) > catalog.MaxDescriptionLen:
		return catalog.Category{}, fmt.Errorf("its description is longer than %d characters", catalog.MaxDescriptionLen)
	case c.Name != strings.TrimSpace(c.Name):
		return catalog.Category{}, errors.New("its name is not trimmed of white space")
	case strings.IndexFunc(c.Name, unicode.IsControl) >= 0:
		return catalog.Category{}, errors.New("its name holds a control character")
	}
	return c, nil
}

// etcdRefusedKept bounds the keys of refused records an etcd store
// remembers: another writer can put any number of them, and each key held
// costs memory for the life of the process.
const etcdRefusedKept = 1024

// refuse logs and counts a record that is not served, once per key while
// fewer than etcdRefusedKept are remembered; past that, each refusal is
// counted (a record read again counts again) and not logged.
func (s *Etcd) refuse(key []byte, why error) {
	s.refusedMu.Lock()
	_, known := s.refused[string(key)]
	full := !known && len(s.refused) >= etcdRefusedKept
	if !known && !full {
		s.refused[string(key)] = struct{}{}
	}
	s.refusedMu.Unlock()
	switch {
	case known:
	case full:
		if s.refusedN.Add(1) == etcdRefusedKept+1 {
			s.log.Warn("etcd: more records under categories/ are not valid categories than petstore remembers; further ones are counted, each time one is read, and not logged",
				"remembered", etcdRefusedKept)
		}
	default:
		s.refusedN.Add(1)
		s.log.Warn("etcd: a record under categories/ is not a valid category (another writer put it there); it is not served",
			"key", textcut.Truncate(string(key), 200), "err", why)
	}
}

// RecordsRefused returns how many records were not served (see record).
func (s *Etcd) RecordsRefused() uint64 { return s.refusedN.Load() }

// nameCached reports whether the cache holds a category named key
// (folded).
func (s *Etcd) nameCached(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.Has(key)
}

// nameHolder returns the id and name of the cached category whose folded
// name is key; 0 and "" when there is none.
func (s *Etcd) nameHolder(key string) (id int64, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, name, _ = s.idx.Holder(key)
	return id, name
}

// appliedRevision returns the revision the cache is complete up to.
func (s *Etcd) appliedRevision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// apply adds the categories of kvs that follow the cache's last id, in
// order, publishes them, and records that the cache is complete up to rev.
// Records are never changed, so one already cached is skipped.
func (s *Etcd) apply(kvs []etcd.KV, rev int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applyLocked(kvs, rev) {
		s.signalLocked()
	}
}

// applyLocked is apply with s.mu held; it reports whether the cache grew,
// and leaves the signal to its caller.
func (s *Etcd) applyLocked(kvs []etcd.KV, rev int64) bool {
	added := 0
	for _, kv := range kvs {
		if id, ok := s.keys.idOf(kv.Key); ok && id <= s.idx.LastID() {
			continue
		}
		c, err := s.record(kv)
		if err != nil {
			s.refuse(kv.Key, err)
			continue
		}
		s.idx.Add(catalog.FoldName(c.Name), c)
		added++
	}
	if rev > s.applied {
		s.applied = rev
	}
	if added > 0 {
		s.idx.Publish()
	}
	return added > 0
}

// catchUp reads, page by page at one revision, the categories after the
// cache's last id, and applies them; it returns the revision it read at.
// Used at start, on a compaction, and by a create the watch is slow to
// confirm. Pages are bounded by bytes as well as by count, so that large
// values another writer put there cannot stop it.
func (s *Etcd) catchUp(ctx context.Context) (int64, error) {
	s.catchMu.Lock()
	defer s.catchMu.Unlock()
	from := s.keys.category(s.idx.Snapshot().LastID() + 1)
	var rev int64
	limit := int64(etcdPageSize)
	for page := 0; page < math.MaxInt32; page++ {
		r, err := s.c.Range(ctx, etcd.RangeRequest{Key: from, RangeEnd: s.keys.categoriesEnd, Limit: limit, Revision: rev})
		if errors.Is(err, etcd.ErrAnswerTooLarge) && limit > 1 {
			limit = max(limit/8, 1)
			continue
		}
		if errors.Is(err, etcd.ErrAnswerTooLarge) {
			// One value alone is larger than an answer may be: far
			// larger than a category. Step over its key.
			if r, err = s.c.Range(ctx, etcd.RangeRequest{Key: from, RangeEnd: s.keys.categoriesEnd, Limit: 1, Revision: rev, KeysOnly: true}); err == nil && len(r.Kvs) > 0 {
				s.refuse(r.Kvs[0].Key, etcd.ErrAnswerTooLarge)
				r.Kvs[0].Value = nil
			}
		}
		if err != nil {
			return 0, err
		}
		if rev == 0 {
			rev = int64(r.Header.Revision)
		}
		s.apply(r.Kvs, 0)
		if !r.More || len(r.Kvs) == 0 {
			break
		}
		from = append(bytes.Clone(r.Kvs[len(r.Kvs)-1].Key), 0)
		limit = nextPageLimit(r.Kvs)
	}
	s.apply(nil, rev)
	return rev, nil
}

// nextPageLimit returns how many keys to ask for after a page of kvs:
// as many as take about etcdPageBytes at the page's mean size.
func nextPageLimit(kvs []etcd.KV) int64 {
	size := 0
	for _, kv := range kvs {
		size += len(kv.Key) + len(kv.Value)
	}
	mean := max(size*4/3/max(len(kvs), 1), 1) // base64
	return int64(min(max(etcdPageBytes/mean, 1), etcdPageSize))
}
