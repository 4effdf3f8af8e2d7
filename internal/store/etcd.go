package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"petstore/internal/catalog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"petstore/internal/etcd"
	"petstore/internal/textcut"
)

// Etcd keeps categories in an etcd v3 cluster (PETSTORE_DATA=etcd://…)
// and a cache of them in memory. Any number of petstore processes may share
// one prefix. It is safe for concurrent use.
//
// Keys, all under /PREFIX/:
//
//	counter                  the last id assigned, in decimal
//	names/<FoldName(name)>   {"id":N,"token":"…"}: claims the name
//	categories/<id, 19 digits> the Category JSON exactly as the API serves it
//
// Writes: the creates waiting on this instance share one txn (group
// commit). It compares the counter's mod_revision with the one last seen
// and the create_revision of every name key and record key with 0, and
// puts the counter, the name keys and the records together; so ids are
// consecutive across all instances, names unique, and no record is ever
// overwritten. A 201 means etcd acknowledged the txn (a quorum has it on
// disk).
//
// Reads: the cache is an index filled by a range at start and kept current
// by one watch of categories/. Only valid records enter it (see record):
// anyone who can write the prefix may have put anything there. Watch
// events come in revision order, which is id order, so the index stays
// append-only and its bytes, hence its ETag, are the same on every
// instance. Categories are never changed or deleted by petstore.
type Etcd struct {
	c        *etcd.Client
	log      *slog.Logger
	keys     etcdKeys
	w        *groupWriter
	onCommit func(n int, took time.Duration) // see Options

	// The writer goroutine's view of the counter: the last id and the
	// counter key's mod_revision (0 while it does not exist). A stale view
	// costs one failed txn, whose failure branch brings the fresh one.
	counter    int64
	counterRev int64
	counterBad bool   // the counter key holds something other than an id
	blocked    bool   // a key categories/<counter+1 or more> exists
	refusing   string // why creates are refused, as last logged; "" while they are not
	seen       map[string]struct{}
	lease      etcdLease // for Idempotency-Keys; the writer goroutine's
	// maxCategories bounds the counter, hence the catalogue, cluster-wide:
	// ids are consecutive from 1, so the counter is the number of
	// categories.
	maxCategories int64

	// Idempotency-Keys this instance has made or is making: creates in
	// flight, and done ones to replay without a round trip. Keys made on
	// other instances are found by the txn, whose compare they fail.
	idem    *idempotencyTable
	keyed   createPath
	idemTTL time.Duration
	now     func() time.Time // the clock of idempotency expiry

	// The cache. mu serialises its writers: the watch, the catch-up range
	// reads and the name checks of the writer goroutine. Readers take
	// snapshots and never wait.
	mu       sync.Mutex
	idx      *catalog.Index
	applied  int64         // the cache holds every category up to this revision
	advanced chan struct{} // closed and replaced whenever the cache grows
	catchMu  sync.Mutex    // one catch-up range read at a time

	// lastCounter is the counter as last read from etcd, and when: the
	// bound above which an id cannot exist yet (see idCeiling).
	lastCounter atomic.Pointer[counterReading]

	// Records under categories/ that are not served (see record), by key,
	// so that each is logged and counted once; at most etcdRefusedKept.
	refusedMu sync.Mutex
	refused   map[string]struct{}
	refusedN  atomic.Uint64

	// Read-throughs under way (see Get), by id.
	flightMu sync.Mutex
	flights  map[int64]*readFlight

	// down is why creates cannot be taken now, nil when they can. The
	// write path and a background probe set it; Health reads it without
	// any network I/O.
	down atomic.Pointer[error]

	stop      context.CancelFunc
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// etcdMaxBatch bounds the creates of one txn. etcd allows 128 operations in
// each of a txn's lists (--max-txn-ops); a batch of n creates with
// Idempotency-Keys needs 1+3n compares, 1+3n puts and 2n+2 ranges:
// 1+3·40 = 121.
const etcdMaxBatch = 40

// Time bounds of the etcd store.
const (
	// etcdCreateTimeout bounds a create batch, settling included: within
	// it, a txn whose outcome is unknown is sent again until it is known.
	etcdCreateTimeout = 10 * time.Second
	// etcdCacheWait is how long a create that committed waits for the
	// watch to bring its category into the cache before it reads the
	// missing categories itself.
	etcdCacheWait = 250 * time.Millisecond
	// etcdProbeEvery is how often the background probe checks for a quorum.
	etcdProbeEvery = time.Second
	// etcdPageSize is the most categories read per range request, and
	// etcdPageBytes about the most bytes: a page after one of large values
	// asks for fewer (see nextPageLimit). A valid category is at most about
	// 22 KB as the gateway sends it (maxRecordBytes, then base64), so a
	// full page of them fits etcd.MaxAnswer; values that do not are not
	// categories, and a page that holds them is asked for again, smaller.
	etcdPageSize  = 100
	etcdPageBytes = 1 << 20
)

// The pauses of the etcd store's retry loops: each etcd.Backoff doubles
// from its first pause up to its most.
const (
	// waitForEtcd, between tries to reach a quorum at start.
	startRetryPause = 200 * time.Millisecond
	// commit and importBatch, between sends of a txn whose outcome is
	// unknown.
	txnRetryFirst, txnRetryMax = 20 * time.Millisecond, 500 * time.Millisecond
	// watchLoop, between watches that broke without progress.
	watchRetryFirst, watchRetryMax = 50 * time.Millisecond, time.Second
)

// EtcdConfig says which etcd cluster and prefix the etcd store keeps its
// categories in, and how to reach them (docs/cluster.md).
type EtcdConfig struct {
	Endpoints    []string // base URLs
	Prefix       string   // without slashes: "petstore"
	CAFile       string
	User         string
	Password     string // never logged
	StartTimeout time.Duration
}

// Client is the configuration of the etcd client.
func (cfg EtcdConfig) Client() etcd.Config {
	return etcd.Config{Endpoints: cfg.Endpoints, CAFile: cfg.CAFile, User: cfg.User, Password: cfg.Password}
}

// etcdKeys are the keys of one prefix.
type etcdKeys struct {
	root, counter, names, categories, categoriesEnd, idempotency []byte
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
	if !ok || len(digits) != 19 {
		return 0, false
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

// OpenEtcd waits for the cluster (at most cfg.StartTimeout), fills the
// cache and starts the watch and the health probe.
func OpenEtcd(cfg EtcdConfig, opts Options) (*Etcd, error) {
	opts = opts.withDefaults()
	c, err := etcd.New(cfg.Client())
	if err != nil {
		return nil, err
	}
	s := &Etcd{
		c:        c,
		log:      opts.Log,
		onCommit: opts.OnCommit,
		idem:     newIdempotencyTable(opts.IdempotencyTTL, opts.Now),
		now:      opts.Now,
		idemTTL:  opts.IdempotencyTTL,
		keys:     newEtcdKeys(cfg.Prefix),
		seen:     make(map[string]struct{}),
		refused:  make(map[string]struct{}),
		flights:  make(map[int64]*readFlight),
		idx:      catalog.NewIndex(0, 0),
		advanced: make(chan struct{}),

		maxCategories: opts.MaxCategories,
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	defer cancel()
	counter, err := waitForEtcd(ctx, c, s.keys, cfg)
	if errors.Is(err, errBadCounter) {
		// Another writer's doing: the categories can still be served;
		// creates are refused until the counter is an id again.
		s.log.Error("etcd: creates are refused until the counter is an id again", "err", err)
		s.counterBad, err = true, nil
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	s.counter, s.counterRev = counter.value, counter.rev
	s.noteCounter(counter.value)
	if err := s.catchUp(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the categories under %s: %w", s.keys.root, err)
	}

	bgCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.bg.Add(2)
	go s.watchLoop(bgCtx)
	go s.probeLoop(bgCtx)
	s.w = newGroupWriter(etcdMaxBatch, s.commit, opts.OnBatch)
	s.keyed = createPath{keys: s.idem, get: s.Get, taken: s.keyedTaken, ready: s.Health, commit: s.w.do}
	s.log.Info("etcd: connected", "endpoints", strings.Join(cfg.Endpoints, ","), "prefix", string(s.keys.root),
		"categories", s.idx.Snapshot().Len(), "revision", s.appliedRevision())
	return s, nil
}

// counterState is the counter key as read.
type counterState struct {
	value, rev int64
}

// errBadCounter: the counter key holds something petstore never writes.
var errBadCounter = errors.New("etcd: the counter is not an id")

func parseCounter(kvs []etcd.KV) (counterState, error) {
	if len(kvs) == 0 {
		return counterState{}, nil
	}
	v, err := strconv.ParseInt(string(kvs[0].Value), 10, 64)
	if err != nil || v < 0 {
		return counterState{}, fmt.Errorf("%w: key %s holds %q", errBadCounter, kvs[0].Key, textcut.Truncate(string(kvs[0].Value), 40))
	}
	return counterState{value: v, rev: int64(kvs[0].ModRevision)}, nil
}

// waitForEtcd authenticates and reads the counter, linearizably (so a
// quorum answered), retrying until ctx's deadline. An answer that no retry
// can change (a refused password, no permission) ends the wait at once.
func waitForEtcd(ctx context.Context, c *etcd.Client, keys etcdKeys, cfg EtcdConfig) (counterState, error) {
	pause := etcd.Backoff{First: startRetryPause, Max: startRetryPause}
	for {
		err := c.Authenticate(ctx)
		if err == nil {
			var r *etcd.RangeResponse
			if r, err = c.Range(ctx, etcd.RangeRequest{Key: keys.counter}); err == nil {
				return parseCounter(r.Kvs)
			}
		}
		var ge *etcd.GatewayError
		if errors.As(err, &ge) && !ge.Transient() {
			return counterState{}, fmt.Errorf("etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
		}
		if pause.Wait(ctx) != nil {
			return counterState{}, fmt.Errorf("etcd at %s did not answer with a quorum within %v (PETSTORE_ETCD_START_TIMEOUT); last error: %v",
				strings.Join(cfg.Endpoints, ","), cfg.StartTimeout, err)
		}
	}
}

func (s *Etcd) List(context.Context) (*catalog.Snapshot, error) { return s.idx.Snapshot(), nil }

// Get answers from the cache, and asks etcd for an id beyond it: a
// Location from another instance can be followed here at once. An id that
// cannot exist yet costs etcd nothing, and concurrent reads of one id share
// one request.
func (s *Etcd) Get(ctx context.Context, id int64) ([]byte, error) {
	snap := s.idx.Snapshot()
	if body, ok := snap.Get(id); ok {
		return body, nil
	}
	if n := snap.Len(); n > 0 && id <= snap.LastID() || id > s.idCeiling() {
		return nil, catalog.NotFound(id) // ids are never reused: a gap stays a gap
	}
	s.flightMu.Lock()
	f, joined := s.flights[id]
	if !joined {
		f = &readFlight{done: make(chan struct{})}
		s.flights[id] = f
	}
	s.flightMu.Unlock()
	if !joined {
		// Not bound to this request: the others waiting on it must not
		// fail because its client went away.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.c.Timeout())
		f.body, f.err = s.readRecord(rctx, id)
		cancel()
		s.flightMu.Lock()
		delete(s.flights, id)
		s.flightMu.Unlock()
		close(f.done)
	}
	select {
	case <-f.done:
		return f.body, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readFlight is one read of a category that concurrent Gets of its id share.
type readFlight struct {
	done chan struct{} // closed when body and err are set
	body []byte
	err  error
}

// readRecord reads the category id from etcd, linearizably. A record that
// is not valid is not there.
func (s *Etcd) readRecord(ctx context.Context, id int64) ([]byte, error) {
	key := s.keys.category(id)
	r, err := s.c.Range(ctx, etcd.RangeRequest{Key: key})
	switch {
	case errors.Is(err, etcd.ErrAnswerTooLarge):
		s.refuse(key, err)
		return nil, catalog.NotFound(id)
	case err != nil:
		s.log.Warn("etcd: reading a category not yet in the cache failed", "id", id, "err", err)
		return nil, catalog.ErrUnavailable
	case len(r.Kvs) == 0:
		return nil, catalog.NotFound(id)
	}
	c, err := s.record(r.Kvs[0])
	if err != nil {
		s.refuse(key, err)
		return nil, catalog.NotFound(id)
	}
	return c.AppendJSON(nil), nil
}

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
	etcdCounterFresh = 3 * etcdProbeEvery
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

// Create queues nc for the next txn, then waits until the category is in
// the cache, so that this instance lists it as soon as it answers 201. A
// create with an Idempotency-Key this instance knows is answered here; one
// another instance made is found by the txn (its key's compare fails) and
// answered with that create's category.
func (s *Etcd) Create(ctx context.Context, nc catalog.NewCategory) (Created, error) {
	c, err := s.keyed.create(ctx, nc)
	if err == nil && c.JSON == nil {
		c.JSON = s.awaitCached(nc.WithID(c.ID))
	}
	return c, err
}

// nameCached reports whether the cache holds a category named key
// (folded).
func (s *Etcd) nameCached(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idx.Has(key)
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
		return 0, true, catalog.NameTaken(nc.Name)
	}
	var claim keyClaim
	if err := json.Unmarshal(r.Kvs[0].Value, &claim); err != nil || claim.ID <= 0 {
		return 0, true, fmt.Errorf("etcd key %s holds %q, not what petstore writes", r.Kvs[0].Key, textcut.Truncate(string(r.Kvs[0].Value), 80))
	}
	return claim.ID, true, nil
}

// requestHex is the request fingerprint of nc in hex, as a key's claim in
// etcd keeps it.
func requestHex(nc catalog.NewCategory) string {
	fp := requestFingerprint(nc)
	return hex.EncodeToString(fp[:])
}

// awaitCached returns the JSON of c once the cache has it. If the watch
// does not bring it within etcdCacheWait, the missing categories are read
// with a range; if even that fails, c's own JSON is returned (it is
// committed; only the list lags).
func (s *Etcd) awaitCached(c catalog.Category) []byte {
	timer := time.NewTimer(etcdCacheWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		advanced := s.advanced
		s.mu.Unlock()
		if body, ok := s.idx.Snapshot().Get(c.ID); ok {
			return body
		}
		select {
		case <-advanced:
			continue
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.c.Timeout())
		err := s.catchUp(ctx)
		cancel()
		if body, ok := s.idx.Snapshot().Get(c.ID); ok {
			return body
		}
		s.log.Warn("etcd: a created category is not in the cache yet", "id", c.ID, "err", err)
		return c.AppendJSON(nil)
	}
}

// pendingCreate is a create of the batch under way, with its claim token.
type pendingCreate struct {
	req   *createRequest
	token string
	id    int64
}

// commit runs on the group writer's goroutine: one txn for the batch,
// again for the creates left after a lost race, and again, unchanged, for
// a txn whose outcome is unknown.
//
// Sending the same txn again settles an unknown outcome. If the first one
// was applied, the counter has moved, so the second fails its compare, and
// its failure branch reads the name keys back (linearizably): our tokens
// are there, the creates are committed. If it was not applied, the second
// one may succeed, and after it the first can never apply (its compare of
// the counter fails from then on). Either way: never a duplicate, never a
// 201 for a category that was not committed.
func (s *Etcd) commit(batch []*createRequest) {
	pending, later := s.checkNames(batch)
	if len(later) > 0 {
		// Keyed creates of a name another create of this batch claims:
		// each may be the retry of the create that made that name (its
		// key tells), so they go in a txn of their own, after this one.
		defer s.commit(later)
	}
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdCreateTimeout)
	defer cancel()

	var unknown error // the last unknown outcome, while one may still apply
	pause := etcd.Backoff{First: txnRetryFirst, Max: txnRetryMax}
	for attempt := 0; len(pending) > 0; attempt++ {
		if pending = s.prepare(ctx, pending); len(pending) == 0 {
			return
		}
		start := time.Now()
		resp, err := s.c.Txn(ctx, s.buildTxn(pending))
		switch {
		case err == nil && resp.Succeeded:
			s.committed(pending, resp, time.Since(start))
			return
		case err == nil:
			if pending, err = s.settle(pending, resp); err != nil {
				failPending(pending, err)
				return
			}
			unknown = nil
			continue
		case errors.Is(err, etcd.ErrUnknownOutcome):
			unknown = err
		case errors.Is(err, etcd.ErrUnreachable) && unknown != nil:
			// An earlier attempt may still be applied: keep trying until
			// the deadline tells us to give up.
		case errors.Is(err, etcd.ErrUnreachable):
			s.markDown(err)
			failPending(pending, catalog.ErrUnavailable)
			return
		case etcd.IsLeaseNotFound(err) && attempt < 3:
			// The lease of the keys is gone (revoked, or lost with a
			// restore): nothing was applied; grant a new one and go again.
			s.lease = etcdLease{}
			continue
		default:
			// A final refusal (4xx): nothing was applied, and sending it
			// again would not change the answer. The detail is logged.
			failPending(pending, err)
			return
		}
		if ctx.Err() != nil || attempt > 1000 {
			s.giveUp(pending, unknown)
			return
		}
		pause.Wait(ctx) // a done ctx ends the loop above
	}
}

// prepare readies pending for a txn: it refuses the creates that the
// counter or the cap do not allow, and grants a lease for Idempotency-Keys.
// It returns the creates to send: none when every one has failed.
func (s *Etcd) prepare(ctx context.Context, pending []*pendingCreate) []*pendingCreate {
	if err := s.checkCounter(ctx, len(pending)); err != nil {
		failPending(pending, err)
		return nil
	}
	if pending = s.cutToQuota(pending); len(pending) == 0 {
		return nil
	}
	if err := s.ensureLease(ctx, pending); err != nil {
		if errors.Is(err, etcd.ErrUnreachable) || errors.Is(err, etcd.ErrUnknownOutcome) {
			s.markDown(err)
			err = catalog.ErrUnavailable
		}
		failPending(pending, err)
		return nil
	}
	return pending
}

// giveUp fails pending after the create's deadline passed with its
// outcome unknown.
func (s *Etcd) giveUp(pending []*pendingCreate, unknown error) {
	s.markDown(unknown)
	s.log.Error("etcd: gave up settling a create txn", "creates", len(pending), "err", unknown)
	failPending(pending, catalog.ErrOutcomeUnknown)
}

// cutToQuota refuses, with catalog.ErrQuotaExceeded, the creates of pending that
// would take the counter past maxCategories, and returns the others. The
// txn commits only on top of the counter known here (it compares its
// mod_revision), so cutting every batch to the room left keeps all
// instances together within the cap. An unknown outcome is settled by
// the same txn again: the counter has not moved, nor has the cut.
func (s *Etcd) cutToQuota(pending []*pendingCreate) []*pendingCreate {
	room := max(s.maxCategories-s.counter, 0)
	if int64(len(pending)) <= room {
		return pending
	}
	for _, p := range pending[room:] {
		p.req.err = catalog.ErrQuotaExceeded
	}
	return pending[:room]
}

// errCounterBehind answers creates while a category record holds an id the
// counter would give: another writer set the counter back.
var errCounterBehind = errors.New("etcd: the id counter is below the id of a category record; a create would overwrite it")

// counterRefusal returns why the writer's view of the counter cannot give
// n ids after last, the cache's last id, or nil.
func (s *Etcd) counterRefusal(n int, last int64) error {
	switch {
	case s.counterBad:
		return errBadCounter
	case s.counter > math.MaxInt64-int64(n):
		return catalog.ErrIDsExhausted
	case s.blocked || s.counter < last:
		return errCounterBehind
	}
	return nil
}

// checkCounter returns nil when the counter leaves room for n ids above
// every record. A view that does not is read again before it refuses (two
// quorum reads, no write): another writer may have put the counter right,
// and a refusal must last no longer than its cause. Each new cause is
// logged once, with the values.
func (s *Etcd) checkCounter(ctx context.Context, n int) error {
	// Taken before the read: every id the cache holds then is at most the
	// counter a quorum read gives after. One taken later may be a create
	// of another instance made since.
	last := s.idx.Snapshot().LastID()
	if s.counterRefusal(n, last) == nil {
		s.refusing = ""
		return nil
	}
	next, err := s.readCounter(ctx)
	if errors.Is(err, etcd.ErrUnreachable) {
		s.markDown(err)
		return catalog.ErrUnavailable
	}
	if err != nil {
		return err
	}
	why := s.counterRefusal(n, last)
	if why == nil {
		s.refusing = ""
		return nil
	}
	if why.Error() != s.refusing {
		s.refusing = why.Error()
		s.log.Error("etcd: creates are refused until the counter is put right", "err", why,
			"counter", s.counter, "last_cached_id", last, "record_above_counter", next)
	}
	return why
}

// readCounter reads the counter, then whether a category key lies above
// it at the same revision, and returns that key's id (0: none).
func (s *Etcd) readCounter(ctx context.Context) (int64, error) {
	r, err := s.c.Range(ctx, etcd.RangeRequest{Key: s.keys.counter})
	if err != nil {
		return 0, err
	}
	counter, err := parseCounter(r.Kvs)
	if s.counterBad = errors.Is(err, errBadCounter); err != nil {
		return 0, nil // refused by counterRefusal
	}
	s.counter, s.counterRev, s.blocked = counter.value, counter.rev, false
	s.noteCounter(counter.value)
	if counter.value == math.MaxInt64 {
		return 0, nil
	}
	above := s.aboveCounter()
	above.Revision = int64(r.Header.Revision) // the counter's moment, not a later create's
	if r, err = s.c.Range(ctx, *above); err != nil {
		return 0, err
	}
	id := s.firstID(r.Kvs)
	s.blocked = id != 0
	return id, nil
}

// aboveCounter is the range of the keys of the next etcdMaxBatch ids
// after the counter (s.counter < math.MaxInt64), which a batch may take
// and which must not exist.
func (s *Etcd) aboveCounter() *etcd.RangeRequest {
	end := s.keys.categoriesEnd
	if s.counter < math.MaxInt64-etcdMaxBatch {
		end = s.keys.category(s.counter + etcdMaxBatch + 1)
	}
	return &etcd.RangeRequest{Key: s.keys.category(s.counter + 1), RangeEnd: end, KeysOnly: true}
}

// firstID returns the id of the first key of kvs that is a category's
// (keys another writer made up in between are not), or 0.
func (s *Etcd) firstID(kvs []etcd.KV) int64 {
	for _, kv := range kvs {
		if id, ok := s.keys.idOf(kv.Key); ok {
			return id
		}
	}
	return 0
}

// committed records the txn of pending that etcd applied.
func (s *Etcd) committed(pending []*pendingCreate, resp *etcd.TxnResponse, took time.Duration) {
	if s.onCommit != nil {
		s.onCommit(len(pending), took)
	}
	now := s.now()
	for _, p := range pending {
		p.req.cat.ID = p.id
		p.req.at = now
	}
	s.counter += int64(len(pending))
	s.counterRev = int64(resp.Header.Revision)
	s.noteCounter(s.counter)
	s.down.Store(nil)
}

// checkNames answers 409 for names the cache knows and for a name given
// twice in the batch, and returns the other creates with their tokens.
func (s *Etcd) checkNames(batch []*createRequest) (pending []*pendingCreate, later []*createRequest) {
	clear(s.seen)
	pending = make([]*pendingCreate, 0, len(batch))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range batch {
		_, dup := s.seen[req.key]
		switch {
		case dup && req.nc.Key != nil:
			later = append(later, req) // one txn cannot claim a name twice
			continue
		case dup || req.nc.Key == nil && s.idx.Has(req.key):
			// A keyed create whose name is taken may be the retry of the
			// create that took it, on another instance: the txn tells.
			req.err = catalog.NameTaken(req.nc.Name)
			continue
		}
		s.seen[req.key] = struct{}{}
		req.cat = catalog.Category{Name: req.nc.Name, Description: req.nc.Description, HasDescription: req.nc.HasDescription}
		pending = append(pending, &pendingCreate{req: req, token: rand.Text()})
	}
	return pending, later
}

// buildTxn gives the pending creates the ids after s.counter and builds
// their txn. Built again from the same state, it is the same txn.
func (s *Etcd) buildTxn(pending []*pendingCreate) *etcd.TxnRequest {
	n := len(pending)
	t := &etcd.TxnRequest{
		Compare: make([]etcd.Compare, 0, 1+3*n),
		Success: make([]etcd.Op, 0, 1+3*n),
		Failure: make([]etcd.Op, 0, 2*n+2),
	}
	rev := s.counterRev
	t.Compare = append(t.Compare, etcd.Compare{Target: "MOD", Result: "EQUAL", Key: s.keys.counter, ModRevision: &rev})
	zero := int64(0)
	for i, p := range pending {
		p.id = s.counter + int64(i) + 1
		p.req.cat.ID = p.id
		nameKey := s.keys.name(p.req.key)
		claim, _ := json.Marshal(nameClaim{ID: p.id, Token: p.token})
		t.Compare = append(t.Compare,
			etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: nameKey, CreateRevision: &zero},
			// Never over a record: the counter may have been set back.
			etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: s.keys.category(p.id), CreateRevision: &zero})
		t.Success = append(t.Success,
			etcd.Op{RequestPut: &etcd.PutRequest{Key: nameKey, Value: claim}},
			etcd.Op{RequestPut: &etcd.PutRequest{Key: s.keys.category(p.id), Value: p.req.cat.AppendJSON(nil)}})
		t.Failure = append(t.Failure, etcd.Op{RequestRange: &etcd.RangeRequest{Key: nameKey}})
		if k := p.req.nc.Key; k != nil {
			key := s.keys.idempotencyKey(k)
			claim, _ := json.Marshal(keyClaim{ID: p.id, Token: p.token, Request: requestHex(p.req.nc)})
			t.Compare = append(t.Compare, etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: key, CreateRevision: &zero})
			t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: key, Value: claim, Lease: s.lease.id}})
			t.Failure = append(t.Failure, etcd.Op{RequestRange: &etcd.RangeRequest{Key: key}})
		}
	}
	last := strconv.AppendInt(nil, s.counter+int64(n), 10)
	t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: s.keys.counter, Value: last}})
	t.Failure = append(t.Failure, etcd.Op{RequestRange: s.aboveCounter()}, etcd.Op{RequestRange: &etcd.RangeRequest{Key: s.keys.counter}})
	return t
}

// settle reads a failed txn's failure branch: for each create, the range
// of its name key and, with an Idempotency-Key, of that key; then the
// counter. A key or name that holds our token is a create an earlier
// attempt committed. An Idempotency-Key made by another create answers
// that create again (same request) or refuses (another request). A name
// that holds another token is a conflict. The others are retried with the
// fresh counter; settle returns those. When the counter did not move and a
// record holds an id it would give, the counter is behind: settle records
// it for checkCounter.
func (s *Etcd) settle(pending []*pendingCreate, resp *etcd.TxnResponse) ([]*pendingCreate, error) {
	ranges, err := failureRanges(pending, resp)
	if err != nil {
		return pending, err
	}
	counter, err := parseCounter(ranges[len(ranges)-1].Kvs)
	if err != nil {
		s.counterBad = errors.Is(err, errBadCounter)
		return pending, err
	}
	blocked := counter.rev == s.counterRev && s.firstID(ranges[len(ranges)-2].Kvs) != 0
	retry := pending[:0] // filled behind the loop's reads
	var committed int
	next := 0
	for _, p := range pending {
		name, key := ranges[next], (*etcd.RangeResponse)(nil)
		next++
		if p.req.nc.Key != nil {
			key = ranges[next]
			next++
		}
		again, done := s.settleOne(p, name, key)
		if again {
			retry = append(retry, p)
		}
		if done {
			committed++
		}
	}
	if committed > 0 {
		s.down.Store(nil)
	}
	s.counter, s.counterRev, s.blocked = counter.value, counter.rev, blocked
	s.noteCounter(counter.value)
	return retry, nil // when blocked, the next checkCounter refuses them
}

// failureRanges returns the answers of a failed txn's ranges (see
// buildTxn): per create its name key and, with an Idempotency-Key, its key;
// then the range above the counter and the counter.
func failureRanges(pending []*pendingCreate, resp *etcd.TxnResponse) ([]*etcd.RangeResponse, error) {
	ranges := make([]*etcd.RangeResponse, len(resp.Responses))
	for i, r := range resp.Responses {
		if r.ResponseRange == nil {
			return nil, errors.New("etcd: a failed txn answered something other than a range")
		}
		ranges[i] = r.ResponseRange
	}
	want := 2 // the range above the counter, the counter
	for _, p := range pending {
		want++
		if p.req.nc.Key != nil {
			want++
		}
	}
	if len(ranges) != want {
		return nil, fmt.Errorf("etcd: a failed txn answered %d ranges, want %d", len(ranges), want)
	}
	return ranges, nil
}

// settleOne reads the fate of p in a failed txn's answers: its name key,
// and its Idempotency-Key's key (nil when it has none). It says whether p
// is to be sent again, and whether an earlier attempt committed it; else
// it sets p's error or the create it replays.
func (s *Etcd) settleOne(p *pendingCreate, name, key *etcd.RangeResponse) (again, committed bool) {
	if key != nil && len(key.Kvs) > 0 {
		var claim keyClaim
		if err := json.Unmarshal(key.Kvs[0].Value, &claim); err != nil || claim.ID <= 0 {
			p.req.err = fmt.Errorf("etcd key %s holds %q, not what petstore writes", key.Kvs[0].Key, textcut.Truncate(string(key.Kvs[0].Value), 80))
			return false, false
		}
		if claim.Token == p.token { // committed by an earlier attempt
			p.req.cat.ID = claim.ID
			p.req.at = s.now()
			return false, true
		}
		// Made by another create with the key: the keyed create path
		// replays it, or refuses this one if it asks for another
		// category (catalog.NewCategory.SameAs).
		p.req.replayOf = claim.ID
		return false, false
	}
	if len(name.Kvs) == 0 {
		return true, false
	}
	var claim nameClaim
	if err := json.Unmarshal(name.Kvs[0].Value, &claim); err == nil && claim.Token == p.token {
		// Committed by an earlier attempt whose answer was lost.
		p.req.cat.ID = claim.ID
		p.req.at = s.now()
		return false, true
	}
	p.req.err = catalog.NameTaken(p.req.nc.Name)
	return false, false
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

func failPending(pending []*pendingCreate, err error) {
	for _, p := range pending {
		p.req.err = err
	}
}

// markDown records why creates fail, for Health, until the probe or a
// create succeeds again.
func (s *Etcd) markDown(err error) {
	if err == nil {
		err = etcd.ErrUnreachable
	}
	s.down.Store(&err)
}

// Health reports catalog.ErrUnavailable while the last create or probe found no
// quorum. It does no I/O.
func (s *Etcd) Health() error {
	if s.down.Load() != nil {
		return catalog.ErrUnavailable
	}
	return nil
}

// probeLoop checks every etcdProbeEvery that a quorum answers (a
// linearizable read of the counter), so that Health follows the cluster
// even while no create comes, and Get knows how far ids go (idCeiling).
func (s *Etcd) probeLoop(ctx context.Context) {
	defer s.bg.Done()
	ticker := time.NewTicker(etcdProbeEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		pctx, cancel := context.WithTimeout(ctx, s.c.Timeout())
		r, err := s.c.Range(pctx, etcd.RangeRequest{Key: s.keys.counter})
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			if counter, perr := parseCounter(r.Kvs); perr == nil {
				s.noteCounter(counter.value)
			}
		}
		was := s.down.Load()
		if err != nil {
			if was == nil {
				s.log.Warn("etcd: no quorum; creates answer 503 until it is back", "err", err)
			}
			s.markDown(err)
		} else if was != nil {
			s.log.Info("etcd: quorum is back; creates are taken again")
			s.down.Store(nil)
		}
	}
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
		close(s.advanced)
		s.advanced = make(chan struct{})
	}
}

// catchUp reads, page by page at one revision, the categories after the
// cache's last id, and applies them. Used at start, on a compaction, and
// by a create the watch is slow to confirm. Pages are bounded by bytes as
// well as by count, so that large values another writer put there cannot
// stop it.
func (s *Etcd) catchUp(ctx context.Context) error {
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
			return err
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
	return nil
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

// watchLoop keeps the cache current: one watch of categories/ from the
// revision after the cache's, resumed after a broken stream from the last
// revision seen, and after a compaction from a fresh range.
func (s *Etcd) watchLoop(ctx context.Context) {
	defer s.bg.Done()
	pause := etcd.Backoff{First: watchRetryFirst, Max: watchRetryMax}
	warned := false
	for ctx.Err() == nil {
		from := s.appliedRevision() + 1
		err := s.c.Watch(ctx, s.keys.categories, s.keys.categoriesEnd, from, s.onEvents, func(rev int64) { s.apply(nil, rev) })
		if ctx.Err() != nil {
			return
		}
		var compacted *etcd.CompactedError
		if errors.As(err, &compacted) {
			s.log.Warn("etcd: the watch's revision was compacted; reading the categories again", "from", from, "compacted", compacted.Revision)
			if err := s.catchUp(ctx); err != nil {
				s.log.Warn("etcd: reading the categories after a compaction failed; retrying", "err", err)
			}
			continue
		}
		if s.appliedRevision() >= from {
			pause.Reset() // it made progress: the cluster is fine
			warned = false
		}
		if !warned {
			// Once per outage, not once per attempt.
			s.log.Warn("etcd: the watch broke; resuming on the next endpoint", "from", s.appliedRevision()+1, "err", err)
			warned = true
		}
		if pause.Wait(ctx) != nil {
			return
		}
	}
}

// onEvents applies one batch of watch events.
func (s *Etcd) onEvents(events []etcd.Event) error {
	kvs := make([]etcd.KV, 0, len(events))
	var rev int64
	for _, e := range events {
		rev = max(rev, int64(e.KV.ModRevision))
		if e.Type == "DELETE" || e.Type == "1" {
			// petstore never deletes: someone did by hand. Ids are never
			// reused, so the cache keeps the category until a restart.
			s.log.Warn("etcd: a category key was deleted outside petstore; this instance keeps serving it until it restarts", "key", string(e.KV.Key))
			continue
		}
		kvs = append(kvs, e.KV)
	}
	s.apply(kvs, rev)
	return nil
}

func (s *Etcd) Close() error {
	s.closeOnce.Do(func() {
		s.w.close()
		s.stop()
		s.bg.Wait()
		s.c.Close()
	})
	return nil
}
