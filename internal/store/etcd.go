package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/catalog"

	"petstore/internal/etcd"
	"petstore/internal/textcut"
)

// Etcd keeps categories in an etcd v3 cluster (docs/cluster.md)
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
// commit). It compares the counter's mod_revision with the one last seen,
// the create_revision of every name key with 0, and that of every key of
// the range of its records' keys with 0 (none there), and puts the
// counter, the name keys and the records together; so ids are
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
	// costs one failed txn, and a read back that brings the fresh one.
	counter     int64
	counterRev  int64
	counterBad  bool   // the counter key holds something other than an id
	blocked     bool   // a key categories/<counter+1 or more> exists
	compareEach bool   // a key that is no record's lies among the record keys: see buildTxn
	refusing    string // why creates are refused, as last logged; "" while they are not
	seen        map[string]struct{}
	lease       etcdLease // for Idempotency-Keys; the writer goroutine's
	// createTimeout bounds a create batch, settling included:
	// etcdCreateTimeout (tests shorten it).
	createTimeout time.Duration
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
	advanced chan struct{} // closed and replaced whenever the cache grows or the watch delivers
	catchMu  sync.Mutex    // one catch-up range read at a time
	watch    watchState    // what the watch stream has delivered (etcd_watch.go)
	// stall ends the watch under way (see stallWatch).
	stall atomic.Pointer[context.CancelCauseFunc]

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
// Idempotency-Keys needs 2+2n compares (1+3n while each record key is
// compared, see buildTxn), 1+3n puts and 2n+2 ranges: 1+3·40 = 121. The
// read back after a failed txn reads the etcdMaxBatch record keys above
// the counter, so it sees every key a batch's compare of its records
// covers.
const etcdMaxBatch = 40

// Time bounds of the etcd store.
const (
	// etcdCreateTimeout bounds a create batch, settling included: within
	// it, a txn whose outcome is unknown is sent again, and watched for,
	// until it is known.
	etcdCreateTimeout = 10 * time.Second
	// etcdCacheWait is how long a create that committed waits for the
	// watch to bring its category into the cache before it reads the
	// missing categories itself.
	etcdCacheWait = 250 * time.Millisecond
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
// ErrStartTimeout: the etcd cluster did not answer with a quorum within
// EtcdConfig.StartTimeout, when a store opened or an import began.
var ErrStartTimeout = errors.New("the start timeout")

func (cfg EtcdConfig) Client() etcd.Config {
	return etcd.Config{Endpoints: cfg.Endpoints, CAFile: cfg.CAFile, User: cfg.User, Password: cfg.Password}
}

// String describes cfg for a person, without its password: the endpoints,
// user and CA file, and the prefix.
func (cfg EtcdConfig) String() string {
	return fmt.Sprintf("%s, prefix /%s/", cfg.Client(), cfg.Prefix)
}

// GoString is String, so that %#v shows no password either.
func (cfg EtcdConfig) GoString() string { return cfg.String() }

// LogValue logs cfg without its password.
func (cfg EtcdConfig) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("client", cfg.Client()), slog.String("prefix", cfg.Prefix),
		slog.Duration("start_timeout", cfg.StartTimeout))
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
		watch:    watchState{claims: make(map[string]claimSeen)},

		maxCategories: opts.MaxCategories,
		createTimeout: etcdCreateTimeout,
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
	rev, err := s.catchUp(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the categories under %s: %w", s.keys.root, err)
	}
	s.watch.rev = rev

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
			return counterState{}, fmt.Errorf("etcd at %s did not answer with a quorum within %v (%w); last error: %v",
				strings.Join(cfg.Endpoints, ","), cfg.StartTimeout, ErrStartTimeout, err)
		}
	}
}

// List returns every category, sorted by id: an immutable snapshot that
// no later create changes.
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
		_, err := s.catchUp(ctx)
		cancel()
		if body, ok := s.idx.Snapshot().Get(c.ID); ok {
			return body
		}
		s.log.Warn("etcd: a created category is not in the cache yet", "id", c.ID, "err", err)
		return c.AppendJSON(nil)
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

// Close waits for the creates under way, refuses later ones
// (catalog.ErrStopping), and stops the watch and the probe.
func (s *Etcd) Close() error {
	s.closeOnce.Do(func() {
		s.w.close()
		s.stop()
		s.bg.Wait()
		s.c.Close()
	})
	return nil
}
