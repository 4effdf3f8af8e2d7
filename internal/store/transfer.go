package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/journal"

	"petstore/internal/etcd"
)

// Export and import (docs/data.md, "Export and import"): a store's
// categories out as a journal, and a journal into an empty etcd prefix.

// exportHeader starts what Export writes: categories only, no keys, so
// version 1, which every petstore reads (a journal store upgrades it when
// it opens the file). See docs/data.md, "Format versions".
var exportHeader = journal.Header(1)

// Export writes the categories of snap to w in the journal format: a file
// a journal store can open.
func Export(w io.Writer, snap *catalog.Snapshot) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(exportHeader + "\n")
	for i := range snap.Len() {
		_, body := snap.At(i)
		bw.Write(body)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Import copies the categories of snap, keeping their ids, into the empty
// prefix cfg names, and returns that prefix's root key. It refuses a
// prefix that holds any key: merging two id sequences has no right answer.
func Import(snap *catalog.Snapshot, cfg EtcdConfig) (root string, err error) {
	c, err := etcd.New(cfg.Client())
	if err != nil {
		return "", err
	}
	defer c.Close()
	keys := newEtcdKeys(cfg.Prefix)
	counter, err := emptyPrefix(c, keys, cfg)
	if err != nil {
		return "", err
	}
	seen := map[string]struct{}{}
	for start := 0; start < snap.Len(); start += etcdMaxBatch {
		end := min(start+etcdMaxBatch, snap.Len())
		last, _ := snap.At(end - 1)
		t, err := importTxn(keys, snap, start, end, counter.rev, seen)
		if err != nil {
			return "", err
		}
		if counter, err = importBatch(c, t, last); err != nil {
			return "", fmt.Errorf("after %d of %d categories: %w", start, snap.Len(), err)
		}
	}
	return string(keys.root), nil
}

// emptyPrefix waits for the cluster and returns the counter, after making
// sure that no key is under the prefix.
func emptyPrefix(c *etcd.Client, keys etcdKeys, cfg EtcdConfig) (counterState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartTimeout)
	counter, err := waitForEtcd(ctx, c, keys, cfg)
	cancel()
	if err != nil {
		return counter, err
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	r, err := c.Range(ctx, etcd.RangeRequest{Key: keys.root, RangeEnd: etcd.PrefixEnd(keys.root), CountOnly: true})
	cancel()
	if err != nil {
		return counter, err
	}
	if r.Count > 0 {
		return counter, fmt.Errorf("the prefix %s already holds %d keys; an import goes into an empty prefix only", keys.root, r.Count)
	}
	return counter, nil
}

// importTxn is the txn that puts the categories at positions start to end
// of snap, their name claims and the counter,
// if the counter is still at rev. A name two records share (a Go whose
// folding told them apart wrote the journal) is claimed by the first:
// seen holds the names claimed so far.
func importTxn(keys etcdKeys, snap *catalog.Snapshot, start, end int, rev int64, seen map[string]struct{}) (*etcd.TxnRequest, error) {
	t := &etcd.TxnRequest{Compare: []etcd.Compare{{Target: "MOD", Result: "EQUAL", Key: keys.counter, ModRevision: &rev}}}
	for i := start; i < end; i++ {
		id, body := snap.At(i)
		var cat struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(body, &cat); err != nil {
			return nil, err
		}
		if _, dup := seen[catalog.FoldName(cat.Name)]; !dup {
			seen[catalog.FoldName(cat.Name)] = struct{}{}
			claim, _ := json.Marshal(nameClaim{ID: id, Token: "import"})
			t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: keys.name(catalog.FoldName(cat.Name)), Value: claim}})
		}
		t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: keys.category(id), Value: body}})
	}
	last, _ := snap.At(end - 1)
	t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: keys.counter, Value: strconv.AppendInt(nil, last, 10)}})
	t.Failure = []etcd.Op{{RequestRange: &etcd.RangeRequest{Key: keys.counter}}}
	return t, nil
}

// importBatch sends one txn of an import, again after a pause while its
// outcome is unknown, and returns the counter after it.
func importBatch(c *etcd.Client, t *etcd.TxnRequest, last int64) (counterState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), etcdCreateTimeout)
	defer cancel()
	pause := etcd.Backoff{First: txnRetryFirst, Max: txnRetryMax}
	for {
		resp, err := c.Txn(ctx, t)
		switch {
		case err == nil && resp.Succeeded:
			return counterState{value: last, rev: int64(resp.Header.Revision)}, nil
		case err == nil:
			cr := resp.Responses[0].ResponseRange
			if cr == nil {
				return counterState{}, errors.New("etcd: a failed txn did not answer the counter's range")
			}
			now, err := parseCounter(cr.Kvs)
			if err == nil && now.value == last {
				return now, nil // an attempt whose answer was lost was applied
			}
			return counterState{}, errors.New("another writer changed the prefix during the import")
		case !errors.Is(err, etcd.ErrUnknownOutcome):
			return counterState{}, err
		}
		if pause.Wait(ctx) != nil {
			return counterState{}, err
		}
	}
}
