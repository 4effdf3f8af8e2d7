package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"petstore/internal/catalog"

	"petstore/internal/journal"
)

// Journal keeps categories in a journal file (internal/journal, one
// record a line: catalog.AppendRecord; docs/data.md, "Journal format") and
// in memory. It is safe for concurrent use.
// Create returns only after the category's record is written and synced;
// creates that arrive while a write is under way share the next write and
// sync (group commit).
type Journal struct {
	idx   *catalog.Index // written by the group writer's goroutine only
	j     *journal.File
	w     *groupWriter
	keys  *idempotencyTable
	keyed createPath
	now   func() time.Time
	max   int64 // categories at most

	// appendLines writes a batch's records: j.Append, but for tests that
	// fail it. It is called once per batch.
	appendLines func(records []byte) error

	// failed holds the error that stopped the journal, once a write could
	// not be undone; from then on creates fail until a restart.
	failed atomic.Pointer[error]

	onCommit func(n int, took time.Duration) // see Options

	// Scratch space of the writer goroutine.
	seen    map[string]*createRequest
	records []byte
}

// OpenJournal opens the journal at path and replays its records.
func OpenJournal(path string, opts Options) (*Journal, error) {
	opts = opts.withDefaults()
	keys := newIdempotencyTable(opts.IdempotencyTTL, opts.Now)
	var idx *catalog.Index
	var collisions []int // categories whose name folds like an earlier one's
	apply := func(line []byte) error {
		rec, err := catalog.ParseRecord(line)
		if err != nil {
			return err
		}
		collides, err := idx.Append(rec.Category)
		if err != nil {
			return err
		}
		if collides {
			collisions = append(collisions, idx.Len()-1)
		}
		if rec.Key != nil {
			keys.load(rec.Key.ID, rec.Category.ID, rec.Key.At)
		}
		return nil
	}
	j, err := journal.Open(path, apply, journal.Options{
		ReadOnly: opts.ReadOnly,
		Log:      opts.Log,
		Size:     func(lines, size int) { idx = catalog.NewIndex(lines, size) },
	})
	if err != nil {
		return nil, err
	}
	if len(collisions) > 0 {
		warnCollisions(idx, j.Path(), collisions, opts.Log)
	}
	idx.Publish()
	s := &Journal{idx: idx, j: j, keys: keys, now: opts.Now, max: opts.MaxCategories, seen: make(map[string]*createRequest), onCommit: opts.OnCommit}
	s.appendLines = j.Append
	s.w = newGroupWriter(journal.MaxAppendLines, s.commit, opts.OnBatch)
	s.keyed = createPath{keys: keys, get: s.Get, commit: s.w.do}
	return s, nil
}

// List returns every category, sorted by id: an immutable snapshot that
// no later create changes.
func (s *Journal) List(context.Context) (*catalog.Snapshot, error) { return s.idx.Snapshot(), nil }

// Get returns the JSON of category id, or a *catalog.NotFoundError.
func (s *Journal) Get(_ context.Context, id int64) ([]byte, error) {
	return getFrom(s.idx.Snapshot(), id)
}

// Create stores nc and returns its id and JSON; see the package comment
// for Idempotency-Keys and the errors it returns.
func (s *Journal) Create(ctx context.Context, nc catalog.NewCategory) (Created, error) {
	return s.keyed.create(ctx, nc)
}

// commit makes a batch durable with one journal write, then applies it.
// It runs on the group writer's goroutine.
func (s *Journal) commit(batch []*createRequest) {
	if err := s.Health(); err != nil {
		failBatch(batch, err)
		return
	}
	accepted := assignBatch(s.idx, batch, s.seen, s.now(), s.max)
	if accepted == 0 {
		return
	}
	s.records = s.records[:0]
	for _, req := range batch {
		if req.err == nil {
			s.records = catalog.AppendRecord(s.records, req.cat, req.nc.Key, req.at)
		}
	}
	start := time.Now()
	if err := s.appendLines(s.records); err != nil {
		s.failBatch(batch, err)
		return
	}
	if s.onCommit != nil {
		s.onCommit(accepted, time.Since(start))
	}
	applyBatch(s.idx, batch)
}

// failBatch answers a batch whose append failed with err. Its lines are
// not stored unless the journal could not undo the append: then they may
// be, and a restart may bring them back, so the batch's outcome is unknown
// (catalog.ErrOutcomeUnknown). A journal broken by the failure (its sync
// failed: the kernel may have dropped pages it could not write) takes no
// more creates until the service is restarted: they are refused with
// catalog.ErrUnavailable.
func (s *Journal) failBatch(batch []*createRequest, err error) {
	if errors.Is(err, journal.ErrBroken) {
		failure := fmt.Errorf("%w: the journal takes no more creates after a failed write; restart the service: %w", catalog.ErrUnavailable, err)
		s.failed.Store(&failure)
	}
	if errors.Is(err, journal.ErrNotUndone) {
		err = fmt.Errorf("%w: %w", catalog.ErrOutcomeUnknown, err)
	}
	failBatch(batch, err)
}

// Health returns why creates cannot be taken now, or nil.
func (s *Journal) Health() error {
	if err := s.failed.Load(); err != nil {
		return *err
	}
	return nil
}

// RecordsRefused returns 0: a journal that holds a record replay refuses
// does not open.
func (s *Journal) RecordsRefused() uint64 { return 0 }

// Close waits for the creates under way, refuses later ones
// (catalog.ErrStopping) and closes the journal file.
func (s *Journal) Close() error {
	s.w.close()
	return s.j.Close()
}

// maxCollisionWarnings bounds the warnings of one replay: a file that holds
// many colliding names is summed up after these.
const maxCollisionWarnings = 10

// warnCollisions logs, for each category in later (positions in x), that
// its name equals an earlier one's under this build's case folding, naming
// both lines. It runs only when there are collisions, so finding the
// earlier lines costs one more pass over the names then and nothing
// otherwise. Line numbers follow from positions: the header is line 1 and
// every later line is one category.
func warnCollisions(x *catalog.Index, path string, later []int, log *slog.Logger) {
	first := make(map[string]int, len(later)) // folded name: position of its first category
	for _, i := range later {
		first[catalog.FoldName(x.NameAt(i))] = -1
	}
	for i := range x.Len() {
		key := catalog.FoldName(x.NameAt(i))
		if f, ok := first[key]; ok && f < 0 {
			first[key] = i
		}
	}
	for n, i := range later {
		if n == maxCollisionWarnings {
			log.Warn("journal: more names are equal ignoring case to earlier ones; all are kept", "path", path, "more", len(later)-n)
			return
		}
		name := x.NameAt(i)
		f := first[catalog.FoldName(name)]
		log.Warn("journal: two names are equal under this build's comparison of names (the case folding of its Unicode tables, fullwidth forms as ASCII), which the build that wrote them did not make; both are kept, and a new create of either is refused",
			"line", path+":"+strconv.Itoa(i+2), "name", strconv.Quote(name),
			"earlier_line", path+":"+strconv.Itoa(f+2), "earlier_name", strconv.Quote(x.NameAt(f)))
	}
}
