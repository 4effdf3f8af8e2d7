package store

import (
	"context"
	"errors"
	"fmt"

	"petstore/internal/catalog"
)

// createPath is the one create path of every store: a create with an
// Idempotency-Key the table knows is answered from it, a new key is
// claimed for its create and settled by the outcome, and a create without
// a key goes straight to commit. Its fields are the store's own steps,
// set once when the store opens.
type createPath struct {
	keys *idempotencyTable
	// get reads a category an earlier create of a key made.
	get func(ctx context.Context, id int64) ([]byte, error)
	// taken, if set, answers a keyed create without a commit when it can:
	// done reports that it did, with the category to replay, or err.
	taken func(ctx context.Context, nc catalog.NewCategory) (replayOf int64, done bool, err error)
	// ready, if set, says why no create can be committed now, or nil.
	ready func() error
	// commit makes the create durable, refuses it, or finds that an
	// earlier create with its key made a category (req.replayOf).
	commit func(*createRequest)
}

// create runs the create of nc. The JSON of what it made is req.body, or
// nil if the store has it yet to read (the etcd store's cache).
func (k *createPath) create(ctx context.Context, nc catalog.NewCategory) (Created, error) {
	key := nc.Key
	if key != nil {
		switch outcome, id := k.keys.claim(key); outcome {
		case claimDone:
			return k.replay(ctx, nc, id)
		case claimInFlight:
			return Created{}, catalog.ErrKeyInUse
		}
		if k.taken != nil {
			if id, done, err := k.taken(ctx, nc); done {
				k.keys.release(key)
				if err != nil {
					return Created{}, err
				}
				return k.replay(ctx, nc, id)
			}
		}
	}
	if k.ready != nil {
		if err := k.ready(); err != nil {
			if key != nil {
				k.keys.release(key)
			}
			return Created{}, err
		}
	}
	req := newCreateRequest(nc)
	k.commit(req)
	if key != nil {
		if req.err != nil || req.replayOf != 0 {
			// Failed: a retry starts afresh. Made elsewhere: the store
			// keeps that key (and its expiry); a retry asks it again.
			k.keys.release(key)
		} else {
			k.keys.done(key, req.cat.ID, req.at)
		}
	}
	switch {
	case req.err != nil:
		return Created{}, req.err
	case req.replayOf != 0:
		return k.replay(ctx, nc, req.replayOf)
	}
	return Created{ID: req.cat.ID, JSON: req.body}, nil
}

// replay answers nc with category id, which an earlier create with the
// same Idempotency-Key made: again, if nc asks for that category
// (catalog.NewCategory.SameAs), or catalog.ErrKeyReused.
func (k *createPath) replay(ctx context.Context, nc catalog.NewCategory, id int64) (Created, error) {
	made, err := k.get(ctx, id)
	if errors.Is(err, catalog.ErrNotFound) {
		// Not a category the client asked for: the key names one the store
		// should hold.
		return Created{}, fmt.Errorf("Idempotency-Key names category %d, which is not stored: %v", id, err)
	}
	if err != nil {
		return Created{}, err
	}
	if !nc.SameAs(made, id) {
		return Created{}, catalog.ErrKeyReused
	}
	return Created{ID: id, JSON: made, Replayed: true}, nil
}
