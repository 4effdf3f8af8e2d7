package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/internal/catalog"
	"petstore/internal/petstoretest"

	"petstore/internal/etcd"
	"petstore/internal/etcd/etcdtest"
)

// Another writer with access to the prefix (an operator's etcdctl, a buggy
// tool, an attacker holding etcd credentials) puts what it likes under it.
// These tests do so through the gateway of a real cluster, as such a writer
// would, and check that petstore never overwrites a category, serves only
// valid categories, hides none and still starts; and that requests that
// cannot succeed cost etcd no write and no quorum read.
func TestEtcdForeignData(t *testing.T) {
	t.Parallel()
	cluster := etcdtest.StartCluster(t)
	client := loadClient(t)

	t.Run("counter set back", func(t *testing.T) { testCounterSetBack(t, cluster, client) })
	t.Run("record at the next id", func(t *testing.T) { testRecordAtNextID(t, cluster, client) })
	t.Run("a key among the record keys", func(t *testing.T) { testKeyAmongRecords(t, cluster, client) })
	t.Run("counter at the largest id and back", func(t *testing.T) { testCounterExhaustedAndBack(t, cluster, client) })
	t.Run("invalid records", func(t *testing.T) { testInvalidRecords(t, cluster, client) })
	t.Run("large values", func(t *testing.T) { testLargeValues(t, cluster, client) })
	t.Run("taken names cost no write", func(t *testing.T) { testTakenNamesNoWrite(t, cluster, client) })
	t.Run("ids beyond reach cost no read", func(t *testing.T) { testFarIDsNoRead(t, cluster, client) })
}

// etcdPost sends one gateway request to the cluster's first member and
// returns the answer's body.
func etcdPost(t *testing.T, cluster *etcdtest.Cluster, path string, in any) []byte {
	t.Helper()
	body, _ := json.Marshal(in)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Post("http://"+cluster.Members()[0].Client()+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("etcd %s: %v", path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("etcd %s: %d %s", path, resp.StatusCode, out)
	}
	return out
}

func foreignPut(t *testing.T, cluster *etcdtest.Cluster, key string, value []byte) {
	t.Helper()
	etcdPost(t, cluster, "/v3/kv/put", map[string][]byte{"key": []byte(key), "value": value})
}

func foreignDelete(t *testing.T, cluster *etcdtest.Cluster, key string) {
	t.Helper()
	etcdPost(t, cluster, "/v3/kv/deleterange", map[string][]byte{"key": []byte(key)})
}

// foreignGet returns the value of key, or nil.
func foreignGet(t *testing.T, cluster *etcdtest.Cluster, key string) []byte {
	t.Helper()
	var out etcd.RangeResponse
	if err := json.Unmarshal(etcdPost(t, cluster, "/v3/kv/range", map[string][]byte{"key": []byte(key)}), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Kvs) == 0 {
		return nil
	}
	return out.Kvs[0].Value
}

func categoryKey(prefix string, id int64) string {
	return fmt.Sprintf("/%s/categories/%019d", prefix, id)
}

// etcdMetric returns the sum and the greatest value of an unlabelled
// metric over the cluster's members.
func etcdMetric(t *testing.T, cluster *etcdtest.Cluster, name string) (sum, most float64) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	for _, m := range cluster.Members() {
		resp, err := client.Get("http://" + m.Client() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		v := metricValue(resp.Body, name)
		resp.Body.Close()
		sum, most = sum+v, max(most, v)
	}
	return sum, most
}

// metricValue reads the value of an unlabelled sample in the text format.
func metricValue(r io.Reader, name string) float64 {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return math.NaN()
}

func refusedRecords(t *testing.T, client *http.Client, base string) float64 {
	t.Helper()
	resp, body := petstoretest.Send(t, client, "GET", base+"/metrics", e2eKey, "", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return metricValue(bytes.NewReader(body), "petstore_store_records_refused_total")
}

func mustCreateVia(t *testing.T, client *http.Client, base, name string, id int64) {
	t.Helper()
	status, c, _, err := createVia(client, base, e2eKey, name)
	if err != nil || status != http.StatusCreated || c.ID != id {
		t.Fatalf("create %s: status %d id %d %v; want 201 with id %d", name, status, c.ID, err, id)
	}
}

func wantCreateStatus(t *testing.T, client *http.Client, base, name string, want int) {
	t.Helper()
	status, c, _, err := createVia(client, base, e2eKey, name)
	if err != nil || status != want {
		t.Fatalf("create %s: status %d (id %d) %v; want %d", name, status, c.ID, err, want)
	}
}

func listIDs(t *testing.T, client *http.Client, base string) string {
	t.Helper()
	list, _, status := listVia(t, client, base, e2eKey)
	if status != http.StatusOK {
		t.Fatalf("list: %d", status)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, strconv.FormatInt(c.ID, 10))
	}
	return strings.Join(ids, ",")
}

// A counter set back below the last id makes creates fail (500, logged once
// with the values), never overwrite a category; put right, creates work
// again without a restart.
func testCounterSetBack(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("back")))
	for i, name := range []string{"a", "b", "c"} {
		mustCreateVia(t, client, svc.url(""), name, int64(i+1))
	}
	before := foreignGet(t, cluster, categoryKey("back", 2))
	foreignPut(t, cluster, "/back/counter", []byte("1"))
	wantCreateStatus(t, client, svc.url(""), "d", http.StatusInternalServerError)
	wantCreateStatus(t, client, svc.url(""), "e", http.StatusInternalServerError)
	if after := foreignGet(t, cluster, categoryKey("back", 2)); !bytes.Equal(before, after) {
		t.Fatalf("category 2 was %s, is now %s: overwritten", before, after)
	}
	if n := strings.Count(svc.stderr.String(), "creates are refused until the counter is put right"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once", n)
	}
	if !strings.Contains(svc.stderr.String(), `"counter":1,"last_cached_id":3`) {
		t.Errorf("the refusal's log line does not give the counter and the last id: %s", petstoretest.Redact(svc.stderr.String()))
	}
	foreignPut(t, cluster, "/back/counter", []byte("3"))
	mustCreateVia(t, client, svc.url(""), "d", 4)
}

// A key at the id a create would take, which the cache does not know (it
// is not a valid category, and a GET does not serve it), is not
// overwritten either: the txn compares it.
func testRecordAtNextID(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("next")))
	mustCreateVia(t, client, svc.url(""), "a", 1)
	junk := []byte("not a category")
	foreignPut(t, cluster, categoryKey("next", 2), junk)
	// Not in the cache: a GET reads it through, and finds no category.
	resp, body := petstoretest.Send(t, client, "GET", svc.url("/v1/categories/2"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "GET of a value that is not JSON", resp, body, http.StatusNotFound)
	wantCreateStatus(t, client, svc.url(""), "b", http.StatusInternalServerError)
	if got := foreignGet(t, cluster, categoryKey("next", 2)); !bytes.Equal(got, junk) {
		t.Fatalf("the key of id 2 holds %q, want the foreign value untouched", got)
	}
	wantCreateStatus(t, client, svc.url(""), "b", http.StatusInternalServerError)
	foreignDelete(t, cluster, categoryKey("next", 2))
	mustCreateVia(t, client, svc.url(""), "b", 2)
}

// A key that is no record's among the record keys above the counter (here
// between the keys of ids 2 and 3) fails the compare of the range of a
// batch's records, as etcd applies it: petstore then compares each record
// key, and creates go on, over neither that key nor a record.
func testKeyAmongRecords(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("among")))
	mustCreateVia(t, client, svc.url(""), "a", 1)
	foreign := categoryKey("among", 2) + "0"
	foreignPut(t, cluster, foreign, []byte("not a record"))
	for i, name := range []string{"b", "c", "d"} {
		mustCreateVia(t, client, svc.url(""), name, int64(i+2))
	}
	if got := foreignGet(t, cluster, foreign); string(got) != "not a record" {
		t.Fatalf("the foreign key holds %q, want it untouched", got)
	}
}

// A counter at the largest id answers 500 without wrapping; set back to
// where it was, creates go on at once.
func testCounterExhaustedAndBack(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("max")))
	mustCreateVia(t, client, svc.url(""), "a", 1)
	foreignPut(t, cluster, "/max/counter", []byte(strconv.FormatInt(math.MaxInt64, 10)))
	wantCreateStatus(t, client, svc.url(""), "b", http.StatusInternalServerError)
	wantCreateStatus(t, client, svc.url(""), "b", http.StatusInternalServerError)
	foreignPut(t, cluster, "/max/counter", []byte("1"))
	mustCreateVia(t, client, svc.url(""), "b", 2)
	foreignPut(t, cluster, "/max/counter", []byte("twelve"))
	wantCreateStatus(t, client, svc.url(""), "c", http.StatusInternalServerError)
	foreignPut(t, cluster, "/max/counter", []byte("2"))
	mustCreateVia(t, client, svc.url(""), "c", 3)
}

// Records that are not valid categories are skipped (counted, logged) on
// every path: the watch, a read-through, a start; valid ones, by the replay
// rules, are served, and later creates are not hidden.
func testInvalidRecords(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("bad")))
	mustCreateVia(t, client, svc.url(""), "a", 1)
	foreign := []string{
		`{"id":999,"name":"not its key"}`,
		`not JSON at all`,
		`{"id":4,"name":"` + strings.Repeat("n", catalog.MaxNameLen+1) + `"}`,
		`{"id":5,"name":"extra","colour":"red"}`,
		// No version stored a name untrimmed, blank or with a control
		// character, C0 or C1.
		`{"id":6,"name":" padded "}`,
		`{"id":7,"name":" "}`,
		`{"id":8,"name":"bell\u0007"}`,
		`{"id":9,"name":"next line\u0085"}`,
	}
	for i, v := range foreign {
		foreignPut(t, cluster, categoryKey("bad", int64(i+2)), []byte(v))
	}
	// Valid by the replay rules, which accept what earlier versions did
	// (a control character in a description, a bidirectional control in a
	// name or a description), though a request may not.
	old := []string{
		`{"id":10,"name":"old","description":"bell\u0007"}`,
		`{"id":11,"name":"old\u202eeman","description":"\u202eeman"}`,
	}
	for i, v := range old {
		foreignPut(t, cluster, categoryKey("bad", int64(i+10)), []byte(v))
	}
	foreignPut(t, cluster, "/bad/counter", []byte("11"))

	for id := int64(2); id <= 9; id++ { // the read-through path
		resp, body := petstoretest.Send(t, client, "GET", svc.url("/v1/categories/"+strconv.FormatInt(id, 10)), e2eKey, "", nil)
		petstoretest.WantStatus(t, fmt.Sprintf("GET of foreign record %d", id), resp, body, http.StatusNotFound)
	}
	mustCreateVia(t, client, svc.url(""), "b", 12)
	if got := listIDs(t, client, svc.url("")); got != "1,10,11,12" {
		t.Errorf("list ids: %s, want 1,10,11,12", got)
	}
	if n := refusedRecords(t, client, svc.url("")); n != 8 {
		t.Errorf("petstore_store_records_refused_total: %v, want 8", n)
	}
	// The same at a start: the first read of the categories.
	other := startRun(t, baseEnv(cluster.Data("bad")))
	if got := listIDs(t, client, other.url("")); got != "1,10,11,12" {
		t.Errorf("list ids on an instance started after: %s, want 1,10,11,12", got)
	}
	for _, id := range []string{"10", "11"} {
		resp, body := petstoretest.Send(t, client, "GET", other.url("/v1/categories/"+id), e2eKey, "", nil)
		petstoretest.WantStatus(t, "GET of the old-rules record "+id, resp, body, http.StatusOK)
	}
	if n := refusedRecords(t, client, other.url("")); n != 8 {
		t.Errorf("petstore_store_records_refused_total after a start: %v, want 8", n)
	}
}

// Five values of 1.4 MB (9.3 MB in the gateway's base64, more than an
// answer may hold, at a page of 100) do not stop a start: pages shrink to fit, and the values, far too
// large for a category, are skipped. The instances are the binary: under
// the race detector, decoding the 13 MB the gateway sends for them takes
// seconds of CPU for every instance that reads them.
func testLargeValues(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := petstoretest.Start(t, baseEnv(cluster.Data("huge")))
	mustCreateVia(t, client, svc.URL(""), "a", 1)
	big := bytes.Repeat([]byte("x"), 1400_000)
	for id := int64(2); id <= 6; id++ {
		foreignPut(t, cluster, categoryKey("huge", id), big)
	}
	foreignPut(t, cluster, "/huge/counter", []byte("6"))
	mustCreateVia(t, client, svc.URL(""), "b", 7)

	other := petstoretest.Start(t, baseEnv(cluster.Data("huge")))
	if got := listIDs(t, client, other.URL("")); got != "1,7" {
		t.Errorf("list ids on an instance started after: %s, want 1,7", got)
	}
	if n := refusedRecords(t, client, other.URL("")); n != 5 {
		t.Errorf("petstore_store_records_refused_total: %v, want 5", n)
	}
}

// Creates of a name the cache knows is taken cost etcd no write, keyed or
// not; a keyed retry of the create that took it is still answered with it,
// on another instance too.
func testTakenNamesNoWrite(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	a := startRun(t, baseEnv(cluster.Data("taken")))
	b := startRun(t, baseEnv(cluster.Data("taken")))
	keyed := func(base, key, name string) (*http.Response, []byte) {
		return petstoretest.Send(t, client, "POST", base+"/v1/categories", e2eKey, `{"name":"`+name+`"}`, map[string]string{"Idempotency-Key": `"` + key + `"`})
	}
	resp, body := keyed(a.url(""), "first", "dog")
	petstoretest.WantStatus(t, "the first create", resp, body, http.StatusCreated)
	waitList(t, client, b.url(""), e2eKey, 1, 5*time.Second)

	_, before := etcdMetric(t, cluster, "etcd_server_proposals_committed_total")
	const n = 30
	for i := range n {
		resp, body := keyed(a.url(""), fmt.Sprintf("other-%d", i), "DOG")
		petstoretest.WantStatus(t, "a keyed create of a taken name", resp, body, http.StatusConflict)
		wantCreateStatus(t, client, b.url(""), "Dog", http.StatusConflict)
	}
	resp, body = keyed(b.url(""), "first", "dog") // made on a
	petstoretest.WantStatus(t, "the keyed retry on the other instance", resp, body, http.StatusCreated)
	if resp.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(body), `"id":1`) {
		t.Errorf("the keyed retry: %s, Idempotent-Replayed %q; want category 1 replayed", body, resp.Header.Get("Idempotent-Replayed"))
	}
	resp, body = keyed(b.url(""), "first", "cat")
	petstoretest.WantStatus(t, "the key again with another name", resp, body, http.StatusUnprocessableEntity)
	_, after := etcdMetric(t, cluster, "etcd_server_proposals_committed_total")
	if after-before > 3 {
		t.Errorf("%d creates that could not create anything cost %v raft proposals, want none", 2*n+2, after-before)
	}
}

// A GET of an id far beyond the counter costs etcd no read at all.
func testFarIDsNoRead(t *testing.T, cluster *etcdtest.Cluster, client *http.Client) {
	svc := startRun(t, baseEnv(cluster.Data("far")))
	mustCreateVia(t, client, svc.url(""), "a", 1)
	start := time.Now()
	before, _ := etcdMetric(t, cluster, "etcd_mvcc_range_total")
	const n = 40
	for range n {
		resp, body := petstoretest.Send(t, client, "GET", svc.url("/v1/categories/9223372036854775807"), e2eKey, "", nil)
		petstoretest.WantStatus(t, "GET of the largest id", resp, body, http.StatusNotFound)
	}
	after, _ := etcdMetric(t, cluster, "etcd_mvcc_range_total")
	// The probe reads the counter from each of the 3 members every 0.4 s;
	// the metric is their sum.
	if probes := 3 * (time.Since(start).Seconds()/0.4 + 2); after-before > probes {
		t.Errorf("%d GETs of an id that cannot exist cost %v range reads, want at most the probe's %.0f", n, after-before, probes)
	}
	// An id the counter has reached is read through (not in the cache yet).
	foreignPut(t, cluster, categoryKey("far", 2), []byte(`{"id":2,"name":"elsewhere"}`))
	foreignPut(t, cluster, "/far/counter", []byte("2"))
	resp, body := petstoretest.Send(t, client, "GET", svc.url("/v1/categories/2"), e2eKey, "", nil)
	petstoretest.WantStatus(t, "GET of an id another writer made", resp, body, http.StatusOK)
}
