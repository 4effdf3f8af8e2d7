package catalog

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The errors of the domain. Stores return them, wrapped or not; the HTTP
// layer tells them apart with errors.Is and errors.As and decides what a
// client is told. Their texts are for the log.
var (
	// ErrNotFound: no category has the id (see NotFoundError).
	ErrNotFound = errors.New("no such category")
	// ErrNameTaken: a category has the name already, compared as FoldName
	// compares (see NameTakenError).
	ErrNameTaken = errors.New("name taken")
	// ErrQuotaExceeded: the catalogue holds the most categories the store
	// is configured to keep; nothing was created.
	ErrQuotaExceeded = errors.New("the catalogue holds the most categories it may")
	// ErrIDsExhausted: the last category has the largest id there is.
	ErrIDsExhausted = fmt.Errorf("no id left: the last category has id %d, the largest an id can be", int64(math.MaxInt64))
	// ErrKeyInUse: a create with the same Idempotency-Key is under way.
	ErrKeyInUse = errors.New("a create with this Idempotency-Key is in progress")
	// ErrKeyReused: the Idempotency-Key made a category other than the one
	// the request asks for.
	ErrKeyReused = errors.New("the Idempotency-Key was used with another request")
	// ErrUnavailable: the store cannot take creates now; it may later.
	ErrUnavailable = errors.New("the store cannot take creates now")
	// ErrStopping: the store is closed (the service stops); a retry
	// belongs to another instance, or to this one once it is back.
	ErrStopping = fmt.Errorf("%w: it is closed", ErrUnavailable)
	// ErrOutcomeUnknown: the store could not learn whether the create was
	// stored; it may appear later.
	ErrOutcomeUnknown = fmt.Errorf("%w: whether the create was stored is unknown", ErrUnavailable)
)

// NotFoundError is ErrNotFound for one id.
type NotFoundError struct{ ID int64 }

// NotFound returns the error of a get of id that found nothing.
func NotFound(id int64) error { return &NotFoundError{ID: id} }

func (e *NotFoundError) Error() string { return "no category with id " + strconv.FormatInt(e.ID, 10) }

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// NameTakenError is ErrNameTaken for the name a create asked for, with
// the category that holds it: its id and its name as stored, which may
// differ from the one asked for ("ｄｏｇ" holds "dog").
type NameTakenError struct {
	Name   string // asked for
	ID     int64  // of the category that holds it; 0 when a claim another writer garbled hides it
	Stored string // that category's name; "" when the store did not have it at hand
}

// NameTaken returns the error of a create of name, which the category id,
// named stored, holds.
func NameTaken(name string, id int64, stored string) error {
	return &NameTakenError{Name: name, ID: id, Stored: stored}
}

func (e *NameTakenError) Error() string {
	switch {
	case e.ID == 0:
		return "a category named " + strconv.Quote(e.Name) + " exists"
	case e.Stored == "":
		return "the name " + strconv.Quote(e.Name) + " is held by category " + strconv.FormatInt(e.ID, 10)
	}
	return "a category named " + strconv.Quote(e.Stored) + " (id " + strconv.FormatInt(e.ID, 10) + ") exists"
}

// Is makes errors.Is(err, ErrNameTaken) true.
func (e *NameTakenError) Is(target error) bool { return target == ErrNameTaken }
