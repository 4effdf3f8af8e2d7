package etcd

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"petstore/internal/textcut"
)

var (
	// ErrUnknownOutcome: a write was sent and no answer came back
	// (timeout, connection lost, 503, 504). etcd may have applied it, may
	// apply it later, or never: the caller must settle it by reading back.
	ErrUnknownOutcome = errors.New("etcd: the outcome of a write is unknown")

	// ErrAnswerTooLarge: etcd's answer was longer than MaxAnswer. It is
	// final: another endpoint holds the same data. A caller that reads a
	// range asks again for fewer keys.
	ErrAnswerTooLarge = errors.New("etcd: the answer is too large")

	// ErrUnreachable: no endpoint answered within the call's deadline.
	ErrUnreachable = errors.New("etcd: no endpoint answered")

	// ErrCAFile: the file of CA certificates given in Config.CAFile could
	// not be read or holds none.
	ErrCAFile = errors.New("the CA file for etcd")
)

// GatewayError is an answer of etcd other than 200, decoded whatever the
// version: 3.4 {"error","message","code"}, 3.5 the same in another order,
// 3.6 {"code","message"}, a watch {"error":{"grpc_code",…}}.
type GatewayError struct {
	Status  int    // HTTP status
	Code    int    // gRPC code: 3 invalid argument, 14 unavailable, 16 unauthenticated …
	Message string // etcd's text, for the log
}

func (e *GatewayError) Error() string {
	return fmt.Sprintf("etcd answered %d (gRPC code %d): %s", e.Status, e.Code, e.Message)
}

// Transient reports whether another endpoint, or the same one a little
// later, may answer differently: 503 Unavailable and 504 Deadline exceeded.
func (e *GatewayError) Transient() bool {
	return e.Status == http.StatusServiceUnavailable || e.Status == http.StatusGatewayTimeout ||
		e.Code == 14 || e.Code == 4
}

func (e *GatewayError) unauthenticated() bool {
	return e.Status == http.StatusUnauthorized || e.Code == 16
}

// IsLeaseNotFound reports whether err is etcd refusing a put because its
// lease does not exist (gRPC code 5, "requested lease not found").
func IsLeaseNotFound(err error) bool {
	var ge *GatewayError
	return errors.As(err, &ge) && (ge.Code == 5 || strings.Contains(ge.Message, "lease not found"))
}

// CompactedError: the revision a watch was to start from is compacted away.
type CompactedError struct {
	Revision int64 // the oldest revision etcd keeps
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("etcd: revision compacted (oldest kept: %d)", e.Revision)
}

func decodeGatewayError(status int, body []byte) *GatewayError {
	e := &GatewayError{Status: status, Message: http.StatusText(status)}
	var raw struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Code    *int            `json:"code"`
	}
	if json.Unmarshal(body, &raw) != nil {
		if s := strings.TrimSpace(string(body)); s != "" {
			e.Message = textcut.Truncate(s, 200)
		}
		return e
	}
	if raw.Code != nil {
		e.Code = *raw.Code
	}
	var text string
	if json.Unmarshal(raw.Error, &text) == nil && text != "" {
		e.Message = text
	}
	e.decodeNested(raw.Error)
	if raw.Message != nil && *raw.Message != "" {
		e.Message = *raw.Message
	}
	return e
}

// decodeNested reads the error object of a watch line.
func (e *GatewayError) decodeNested(raw json.RawMessage) {
	var nested struct {
		GRPCCode *int   `json:"grpc_code"`
		Code     *int   `json:"code"`
		HTTPCode int    `json:"http_code"`
		Message  string `json:"message"`
	}
	if json.Unmarshal(raw, &nested) != nil {
		return
	}
	switch {
	case nested.GRPCCode != nil:
		e.Code = *nested.GRPCCode
	case nested.Code != nil:
		e.Code = *nested.Code
	}
	if nested.HTTPCode != 0 && e.Status == http.StatusOK {
		e.Status = nested.HTTPCode
	}
	if nested.Message != "" {
		e.Message = nested.Message
	}
}

// notSent reports whether err happened before the request could reach
// etcd, so that sending it elsewhere cannot apply it twice.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var tlsErr *tls.RecordHeaderError
	return errors.As(err, &tlsErr)
}
