package main

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// Store holds the categories. It is safe for concurrent use.
//
// Reads never wait: they load an immutable snapshot that holds the list
// answer already encoded, so listing costs a copy of bytes whatever the
// number of categories. Creates are serialised by one writer. With a journal,
// Create returns only after the category's record is written and fsynced,
// and creates that arrive while a write is under way share the next write
// and fsync (group commit). A create that fails leaves the store, the id
// sequence and the journal as they were.
type Store struct {
	snap atomic.Pointer[snapshot]

	// mu guards everything below. The writer holds it while it commits a
	// batch; with a journal that is the writer goroutine, otherwise Create.
	mu      sync.Mutex
	names   map[string]struct{} // foldName of every stored name; a replay may bring two names with one key
	list    []byte              // "[" then the categories' JSON joined by ","; no "]"
	items   []item              // one per category, ascending id
	crc     uint32              // CRC-32 of list, for the ETag
	journal *journal            // nil: memory only
	failed  error               // set once the journal can no longer be trusted

	batchNames map[string]struct{} // scratch for commit
	record     []byte              // scratch for commit

	queue     chan *createRequest // to the writer goroutine; nil without a journal
	closeOnce sync.Once
	closing   sync.RWMutex // held for reading while sending on queue
	closed    bool
	writerEnd chan struct{}

	// onBatch, when set (by run, see procsBoost, and by tests), is called
	// by the writer goroutine with the size of each batch it has taken,
	// before it waits for mu. It is set before the first create.
	onBatch func(n int)
}

// item locates one category's JSON in the list: it ends at list[end] and
// starts one byte after the previous item's end (past the ",").
type item struct {
	id  int64
	end int
}

// snapshot is what readers see: the list and items as of one commit. The
// writer only appends beyond len(list) and len(items), so a snapshot's bytes
// never change.
type snapshot struct {
	list   []byte
	items  []item
	etag   [1]string // the ETag header value
	length [1]string // the Content-Length header value of the list answer
}

// createRequest is one Create waiting for the writer.
type createRequest struct {
	nc   NewCategory
	key  string
	cat  Category
	body []byte
	err  error
	done chan struct{}
}

var (
	errStoreClosed  = errors.New("store is closed")
	errIDsExhausted = fmt.Errorf("no id left: the last category has id %d, the largest an id can be", int64(math.MaxInt64))
	crcTable        = crc32.MakeTable(crc32.Castagnoli)
)

// newMemoryStore returns an empty Store that keeps categories in memory only.
func newMemoryStore() *Store {
	s := &Store{
		names:      make(map[string]struct{}),
		list:       []byte{'['},
		batchNames: make(map[string]struct{}),
	}
	s.publish()
	return s
}

// publish makes the current list visible to readers. Callers hold mu (or
// own the store exclusively, during opening).
func (s *Store) publish() {
	n := len(s.items)
	var buf [48]byte
	etag := append(buf[:0], '"')
	etag = strconv.AppendInt(etag, int64(n), 10)
	etag = append(etag, '-')
	etag = strconv.AppendUint(etag, uint64(s.crc), 16)
	etag = append(etag, '"')
	snap := &snapshot{list: s.list[:len(s.list):len(s.list)], items: s.items[:n:n]}
	snap.etag[0] = string(etag)
	snap.length[0] = strconv.Itoa(len(s.list) + len(listClose))
	s.snap.Store(snap)
}

// List returns the JSON array of all categories, sorted by id, its ETag and
// the Content-Length of the whole array, as header values. The caller must
// not modify them; the array's closing "]" is not part of the bytes.
func (s *Store) List() (openList []byte, etag, length []string) {
	snap := s.snap.Load()
	return snap.list, snap.etag[:], snap.length[:]
}

// Len returns the number of categories.
func (s *Store) Len() int { return len(s.snap.Load().items) }

// Get returns the JSON of the category with the given id, and false if there
// is none. The caller must not modify the bytes.
func (s *Store) Get(id int64) ([]byte, bool) {
	snap := s.snap.Load()
	i := sort.Search(len(snap.items), func(i int) bool { return snap.items[i].id >= id })
	if i == len(snap.items) || snap.items[i].id != id {
		return nil, false
	}
	start := 1
	if i > 0 {
		start = snap.items[i-1].end + 1
	}
	return snap.list[start:snap.items[i].end:snap.items[i].end], true
}

// Create stores a new category and returns it with its JSON. Its name must be
// unique case-insensitively: a duplicate is a conflict *apiError.
func (s *Store) Create(nc NewCategory) (Category, []byte, error) {
	req := &createRequest{nc: nc, key: foldName(nc.Name)}
	if s.queue == nil {
		s.mu.Lock()
		s.commit([]*createRequest{req})
		s.mu.Unlock()
		return req.cat, req.body, req.err
	}
	req.done = make(chan struct{})
	s.closing.RLock()
	if s.closed {
		s.closing.RUnlock()
		return Category{}, nil, errStoreClosed
	}
	s.queue <- req
	s.closing.RUnlock()
	<-req.done
	return req.cat, req.body, req.err
}

// maxBatch bounds how many creates share one write and fsync.
const maxBatch = 1024

// writeLoop is the writer goroutine of a journaled store: it takes every
// create that is waiting and commits them together.
func (s *Store) writeLoop() {
	defer close(s.writerEnd)
	batch := make([]*createRequest, 0, maxBatch)
	for req := range s.queue {
		batch = append(batch[:0], req)
	drain:
		for len(batch) < maxBatch {
			select {
			case req, ok := <-s.queue:
				if !ok {
					break drain
				}
				batch = append(batch, req)
			default:
				break drain
			}
		}
		if s.onBatch != nil {
			s.onBatch(len(batch))
		}
		s.mu.Lock()
		s.commit(batch)
		s.mu.Unlock()
		for _, req := range batch {
			close(req.done)
		}
		clear(batch)
	}
}

// commit decides ids and uniqueness for a batch, makes the accepted creates
// durable with one journal write, then applies them. Callers hold mu.
func (s *Store) commit(batch []*createRequest) {
	if s.failed != nil {
		for _, req := range batch {
			req.err = s.failed
		}
		return
	}
	clear(s.batchNames)
	s.record = s.record[:0]
	next := s.lastID()
	accepted := 0
	for _, req := range batch {
		if _, dup := s.names[req.key]; dup {
			req.err = errConflict(req.nc.Name)
			continue
		}
		if _, dup := s.batchNames[req.key]; dup {
			req.err = errConflict(req.nc.Name)
			continue
		}
		if next == math.MaxInt64 {
			// Wrapping would hand out a negative id, which the next
			// replay refuses; failing the create keeps the file sound.
			req.err = errIDsExhausted
			continue
		}
		s.batchNames[req.key] = struct{}{}
		next++
		req.cat = Category{ID: next, Name: req.nc.Name, Description: req.nc.Description, HasDescription: req.nc.HasDescription}
		s.record = append(req.cat.appendJSON(s.record), '\n')
		accepted++
	}
	if accepted == 0 {
		return
	}
	if s.journal != nil {
		if err := s.journal.append(s.record); err != nil {
			if s.journal.broken {
				s.failed = fmt.Errorf("journal unusable after a failed write, restart the service: %w", err)
			}
			for _, req := range batch {
				if req.err == nil {
					req.err = err
				}
			}
			return
		}
	}
	for _, req := range batch {
		if req.err == nil {
			req.body = s.add(req.key, req.cat)
		}
	}
	s.publish()
}

// add appends c to the in-memory state and returns its JSON. Callers hold mu.
func (s *Store) add(key string, c Category) []byte {
	s.names[key] = struct{}{}
	if len(s.items) > 0 {
		s.list = append(s.list, ',')
	}
	start := len(s.list)
	s.list = c.appendJSON(s.list)
	s.crc = crc32.Update(s.crc, crcTable, s.list[start-1:])
	s.items = append(s.items, item{id: c.ID, end: len(s.list)})
	return s.list[start:len(s.list):len(s.list)]
}

func (s *Store) lastID() int64 {
	if len(s.items) == 0 {
		return 0
	}
	return s.items[len(s.items)-1].id
}

// Failed returns the error that stopped the journal, or nil.
func (s *Store) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// Close waits for pending creates, then closes the journal. Creates after
// Close fail.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		if s.queue != nil {
			s.closing.Lock()
			s.closed = true
			close(s.queue)
			s.closing.Unlock()
			<-s.writerEnd
		}
		if s.journal != nil {
			err = s.journal.close()
		}
	})
	return err
}

func errConflict(name string) error {
	return errorf(codeConflict, fmt.Sprintf("a category named %q already exists (names are compared ignoring case)", name))
}
