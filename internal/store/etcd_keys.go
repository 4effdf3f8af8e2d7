package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"petstore/internal/catalog"

	"petstore/internal/etcd"
	"petstore/internal/textcut"
)

// The etcd store's keys under its prefix, the claims it puts in them, and
// the lease its Idempotency-Keys live on.

// etcdKeys are the keys of one prefix.
type etcdKeys struct {
	root, rootEnd, counter, names, categories, categoriesEnd, idempotency []byte
}

func newEtcdKeys(prefix string) etcdKeys {
	root := "/" + prefix + "/"
	k := etcdKeys{
		root:       []byte(root),
		counter:    []byte(root + "counter"),
		names:      []byte(root + "names/"),
		categories: []byte(root + "categories/"),
		// idempotency/SCOPE/KEY: an Idempotency-Key, under a lease;
		// SCOPE is the API key's SHA-256 in hex.
		idempotency: []byte(root + "idempotency/"),
	}
	k.categoriesEnd = etcd.PrefixEnd(k.categories)
	k.rootEnd = etcd.PrefixEnd(k.root)
	return k
}

func (k etcdKeys) category(id int64) []byte {
	return fmt.Appendf(bytes.Clone(k.categories), "%019d", id)
}

func (k etcdKeys) name(folded string) []byte {
	return append(bytes.Clone(k.names), folded...)
}

func (k etcdKeys) idempotencyKey(ik *catalog.IdempotencyKey) []byte {
	key := hex.AppendEncode(bytes.Clone(k.idempotency), ik.Scope[:])
	key = append(key, '/')
	return append(key, ik.Text...)
}

// idOf returns the id in a category key, or false for another key.
func (k etcdKeys) idOf(key []byte) (int64, bool) {
	digits, ok := bytes.CutPrefix(key, k.categories)
	if !ok || len(digits) != 19 || bytes.ContainsFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false // ParseInt would take a sign: "+000000000000000005" is no key of id 5
	}
	id, err := strconv.ParseInt(string(digits), 10, 64)
	return id, err == nil && id > 0
}

// nameClaim is the value of a name key.
type nameClaim struct {
	ID    int64  `json:"id"`
	Token string `json:"token"` // random per create: tells our claim from another's
}

// keyClaim is the value of an Idempotency-Key's key: the create it made.
type keyClaim struct {
	ID      int64  `json:"id"`
	Token   string `json:"token"`   // the create's, as in its name key
	Request string `json:"request"` // hex of the request fingerprint
}

// parseKeyClaim reads the claim an Idempotency-Key's etcd key holds.
func parseKeyClaim(kv etcd.KV) (keyClaim, error) {
	var claim keyClaim
	if err := json.Unmarshal(kv.Value, &claim); err != nil || claim.ID <= 0 {
		return keyClaim{}, fmt.Errorf("etcd key %s holds %q, not what petstore writes", kv.Key, textcut.Truncate(string(kv.Value), 80))
	}
	return claim, nil
}

// keyedTaken answers a keyed create of a name the cache holds, if it does.
// It cannot create anything, but it may be the retry of the create that
// took the name, made on another instance: the key tells, and is read, not
// written.
func (s *Etcd) keyedTaken(ctx context.Context, nc catalog.NewCategory) (replayOf int64, done bool, err error) {
	if !s.nameCached(catalog.FoldName(nc.Name)) {
		return 0, false, nil
	}
	rctx, cancel := context.WithTimeout(ctx, 2*s.c.Timeout())
	defer cancel()
	r, err := s.c.Range(rctx, etcd.RangeRequest{Key: s.keys.idempotencyKey(nc.Key)})
	if err != nil {
		s.log.Warn("etcd: reading an Idempotency-Key failed", "err", err)
		return 0, true, catalog.ErrUnavailable
	}
	if len(r.Kvs) == 0 {
		id, name := s.nameHolder(catalog.FoldName(nc.Name))
		return 0, true, catalog.NameTaken(nc.Name, id, name)
	}
	claim, err := parseKeyClaim(r.Kvs[0])
	if err != nil {
		return 0, true, err
	}
	return claim.ID, true, nil
}

// requestHex is the request fingerprint of nc in hex, as a key's claim in
// etcd keeps it.
func requestHex(nc catalog.NewCategory) string {
	fp := requestFingerprint(nc)
	return hex.EncodeToString(fp[:])
}

// etcdLease is the lease the Idempotency-Keys of recent creates are put
// under. One lease serves for a minute, and lasts that much longer than the
// keys' time to live: every key lives at least its TTL, at most a minute more,
// and a create costs a lease grant once a minute, not once.
type etcdLease struct {
	id      int64
	granted time.Time
}

const etcdLeaseReuse = time.Minute

// ensureLease grants a new lease when a create of pending has an
// Idempotency-Key and the current lease is older than etcdLeaseReuse.
func (s *Etcd) ensureLease(ctx context.Context, pending []*pendingCreate) error {
	keyed := false
	for _, p := range pending {
		keyed = keyed || p.req.nc.Key != nil
	}
	if !keyed || s.lease.id != 0 && time.Since(s.lease.granted) < etcdLeaseReuse {
		return nil
	}
	ttl := int64((s.idemTTL + etcdLeaseReuse + time.Second - 1) / time.Second)
	id, err := s.c.LeaseGrant(ctx, ttl)
	if err != nil {
		return err
	}
	s.lease = etcdLease{id: id, granted: time.Now()}
	return nil
}
