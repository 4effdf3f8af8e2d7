package store

import (
	"runtime"
	"sync"

	"petstore/internal/catalog"
)

// groupWriter is group commit: one goroutine takes every create that is
// waiting and hands them to commit together, so that concurrent creates
// share one durable write (a journal write and sync, or one etcd txn).
// Creates that arrive while a commit runs wait for the next one.
type groupWriter struct {
	queue    chan *createRequest
	maxBatch int
	commit   func(batch []*createRequest) // sets each request's result
	onBatch  func(n int)                  // nil, or told each batch's size first

	closing   sync.RWMutex // held for reading while sending on queue
	closed    bool
	closeOnce sync.Once
	end       chan struct{} // closed when the goroutine has returned
}

// newGroupWriter starts the writer goroutine. commit runs on it alone.
func newGroupWriter(maxBatch int, commit func([]*createRequest), onBatch func(int)) *groupWriter {
	w := &groupWriter{
		queue:    make(chan *createRequest, maxBatch),
		maxBatch: maxBatch,
		commit:   commit,
		onBatch:  onBatch,
		end:      make(chan struct{}),
	}
	go w.loop()
	return w
}

// do queues req and waits until it has been committed or refused.
func (w *groupWriter) do(req *createRequest) {
	req.done = make(chan struct{})
	w.closing.RLock()
	if w.closed {
		w.closing.RUnlock()
		req.err = catalog.ErrStopping
		return
	}
	w.queue <- req
	w.closing.RUnlock()
	<-req.done
}

func (w *groupWriter) loop() {
	defer close(w.end)
	batch := make([]*createRequest, 0, w.maxBatch)
	for req := range w.queue {
		// The creates the last commit answered were made runnable on
		// this goroutine's processor. Left there, most would wait out
		// the next write and sync: a goroutine in a system call keeps
		// its processor until the runtime takes it back (tens of µs), so
		// their answers would be late and their next creates would miss
		// this batch for the one after. Yielding first lets them answer
		// and queue, so the batch takes them; with nothing else runnable
		// it returns at once.
		runtime.Gosched()
		batch = append(batch[:0], req)
	drain:
		for len(batch) < w.maxBatch {
			select {
			case req, ok := <-w.queue:
				if !ok {
					break drain
				}
				batch = append(batch, req)
			default:
				break drain
			}
		}
		if w.onBatch != nil {
			w.onBatch(len(batch))
		}
		w.commit(batch)
		for _, req := range batch {
			close(req.done)
		}
		clear(batch)
	}
}

// close refuses new creates, waits for the queued ones to be committed and
// for the goroutine to end.
func (w *groupWriter) close() {
	w.closeOnce.Do(func() {
		w.closing.Lock()
		w.closed = true
		close(w.queue)
		w.closing.Unlock()
		<-w.end
	})
}
