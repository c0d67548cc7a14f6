package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/shardmesh/shardmesh/shard"
)

// scrape is one member's /metrics, parsed.
type scrape map[string]*dto.MetricFamily

// metricsAddr waits for d's metrics-addr file (written once it serves /metrics).
func (d *daemon) metricsAddr() string {
	d.t.Helper()
	file := filepath.Join(d.dir, "metrics-addr")
	var addr string
	if !waitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(file)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	}) {
		d.t.Fatalf("%s wrote no %s:\n%s", d.name, file, d.log.String())
	}
	return addr
}

// scrapeMetrics reads and parses d's /metrics.
func (d *daemon) scrapeMetrics() scrape {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metricsAddr()+"/metrics", nil)
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("scrape %s: %v", d.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		d.t.Fatalf("scrape %s: %s", d.name, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		d.t.Fatalf("scrape %s: %v", d.name, err)
	}
	return fams
}

// value sums the samples of family name whose labels include labels (alternating name,
// value): a counter's or gauge's value, a histogram's count.
func (s scrape) value(name string, labels ...string) float64 {
	sum := 0.0
	for _, m := range s[name].GetMetric() {
		if !labelsMatch(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func labelsMatch(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func sumOver(ss []scrape, name string, labels ...string) float64 {
	sum := 0.0
	for _, s := range ss {
		sum += s.value(name, labels...)
	}
	return sum
}

// TestMetrics: three daemons serving /metrics on ports they pick; a known number of asks
// through one member's admin client moves the counters as the load says.
func TestMetrics(t *testing.T) {
	c := newCluster(t, append(shardingFlags, "--metrics-listen", "127.0.0.1:0")...)
	seed := c.start("m1")
	ds := []*daemon{seed, c.start("m2", "--join", seed.addr()), c.start("m3", "--join", seed.addr(), "--log-format", "json")}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	cl := client(t, seed)
	before := seed.scrapeMetrics().value("shardmesh_admin_calls_total", "call", "ask")

	// 50 counters asked 6 times each: 300 asks, to the shards of 50 entities (fewer than
	// all 100, so the shard gauges must count what was allocated, not the configuration).
	const entities, rounds, asks = 50, 6, 50 * 6
	names := make([]string, entities)
	touched := map[shard.ID]bool{}
	ex, err := shard.NewHashCodeExtractor(100) // the daemons' number-of-shards
	if err != nil {
		t.Fatal(err)
	}
	for i := range names {
		names[i] = fmt.Sprintf("metrics-%d", i)
		touched[ex.ShardID(shard.EntityID(names[i]))] = true
	}
	for range rounds {
		if _, errs := askAll(cl, names, "inc"); len(errs) > 0 {
			t.Fatalf("%d of %d asks failed, first: %v", len(errs), entities, errs[0])
		}
	}

	// Gauges sampled on ticks settle within a few of them.
	var ss []scrape
	settled := waitFor(5*time.Second, func() bool {
		ss = ss[:0]
		for _, d := range ds {
			ss = append(ss, d.scrapeMetrics())
		}
		return sumOver(ss, "shardmesh_shards", "type", "counter") == float64(len(touched)) &&
			sumOver(ss, "shardmesh_entities", "type", "counter") == entities &&
			sumOver(ss, "shardmesh_coordinator_allocated_shards", "type", "counter") == float64(len(touched)) // sampled on a tick too
	})
	handoffs := sumOver(ss, "shardmesh_handoffs_started_total", "type", "counter")
	local := sumOver(ss, "shardmesh_messages_routed_total", "type", "counter", "route", "local")
	remote := sumOver(ss, "shardmesh_messages_routed_total", "type", "counter", "route", "remote")
	t.Logf("routed local %v, remote %v; shards %v (touched %d), allocated %v; handoffs %v",
		local, remote, sumOver(ss, "shardmesh_shards", "type", "counter"), len(touched),
		sumOver(ss, "shardmesh_coordinator_allocated_shards", "type", "counter"), handoffs)

	// Every ask reached its entity once: exactly, unless a handoff bounced some.
	if handoffs == 0 && local != asks || local < asks {
		t.Errorf("messages routed to entities over the cluster: %v, want %d (handoffs %v)", local, asks, handoffs)
	}
	// The asks entered at m1: what it did not host, it forwarded; m2 and m3 forwarded none.
	if seedLocal := ss[0].value("shardmesh_messages_routed_total", "type", "counter", "route", "local"); handoffs == 0 && seedLocal+ss[0].value("shardmesh_messages_routed_total", "type", "counter", "route", "remote") != asks {
		t.Errorf("m1 routed %v locally and %v remotely, want %d in all", seedLocal, ss[0].value("shardmesh_messages_routed_total", "type", "counter", "route", "remote"), asks)
	}
	if got := ss[1].value("shardmesh_messages_routed_total", "route", "remote") + ss[2].value("shardmesh_messages_routed_total", "route", "remote"); handoffs == 0 && got != 0 {
		t.Errorf("m2 and m3 forwarded %v messages; none were sent to them", got)
	}
	if got := ss[0].value("shardmesh_asks_total", "type", "counter", "outcome", "ok"); got != asks {
		t.Errorf("asks ok at m1: %v, want %d", got, asks)
	}
	if got := ss[0].value("shardmesh_ask_duration_seconds", "type", "counter"); got != asks {
		t.Errorf("ask latencies observed at m1: %v, want %d", got, asks)
	}
	if !settled {
		t.Errorf("shards per region sum to %v, want the %d shards the asks touched; live entities %v, want %d",
			sumOver(ss, "shardmesh_shards", "type", "counter"), len(touched), sumOver(ss, "shardmesh_entities", "type", "counter"), entities)
	}
	if got := sumOver(ss, "shardmesh_coordinator_allocated_shards", "type", "counter"); got != float64(len(touched)) {
		t.Errorf("the coordinator has %v shards allocated, want %d", got, len(touched))
	}
	if got := sumOver(ss, "shardmesh_entity_starts_total", "type", "counter"); got != entities {
		t.Errorf("entity starts: %v, want %d", got, entities)
	}
	if got := sumOver(ss, "shardmesh_coordinator", "type", "counter"); got != 1 {
		t.Errorf("members running the counter coordinator: %v, want 1", got)
	}
	// Admin calls: the asks, counted by call and outcome where they were answered.
	if got := ss[0].value("shardmesh_admin_calls_total", "call", "ask", "outcome", "ok") - before; got != asks {
		t.Errorf("admin ask calls at m1: %v, want %d", got, asks)
	}
	// The counters are durable: each ask read (fenced) and wrote its state in the store.
	if got := sumOver(ss, "shardmesh_store_call_duration_seconds", "call", "write", "outcome", "ok"); got < asks {
		t.Errorf("store writes: %v, want at least %d", got, asks)
	}
	if got := sumOver(ss, "shardmesh_store_batch_size", "batch", "commit"); got == 0 {
		t.Error("no store commit recorded")
	}
	// The metadata group: three voters (all the members), one leader, frames both ways on
	// each; the coordinator's allocations are metadata writes, timed as the group's calls.
	if !waitFor(5*time.Second, func() bool {
		ms := make([]scrape, len(ds))
		for i, d := range ds {
			ms[i] = d.scrapeMetrics()
		}
		return sumOver(ms, "shardmesh_metadata_voter") == 3 && sumOver(ms, "shardmesh_metadata_leader") == 1
	}) {
		t.Errorf("metadata group: never 3 voters and 1 leader")
	}
	if got := sumOver(ss, "shardmesh_metadata_call_duration_seconds", "call", "write", "outcome", "ok"); got == 0 {
		t.Error("no metadata write timed")
	}
	checkJSONLog(t, ds[2])
	for i, s := range ss {
		if s.value("shardmesh_metadata_frames_sent_total") == 0 || s.value("shardmesh_metadata_frames_received_total") == 0 {
			t.Errorf("m%d counts no frames of the metadata group", i+1)
		}
		if got := s.value("shardmesh_members", "status", "Up"); got != 3 {
			t.Errorf("m%d sees %v members Up, want 3", i+1, got)
		}
		if got := s.value("shardmesh_members_unreachable"); got != 0 {
			t.Errorf("m%d sees %v members unreachable", i+1, got)
		}
		if s["go_goroutines"] == nil {
			t.Errorf("m%d serves no Go runtime metrics", i+1)
		}
	}
	if t.Failed() {
		return
	}

	// A fourth member joins: the next rebalance round moves shards to it. The coordinator's
	// member counts the round, its moves and their handoffs (cause rebalance); the entities
	// of the moved shards stop without counting as passivations.
	ds = append(ds, c.start("m4", "--join", seed.addr()))
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 4) }) {
		t.Fatal("m4 did not join")
	}
	moved := waitFor(10*time.Second, func() bool {
		ss = ss[:0]
		for _, d := range ds {
			ss = append(ss, d.scrapeMetrics())
		}
		started := sumOver(ss, "shardmesh_handoffs_started_total", "type", "counter", "cause", "rebalance")
		return ss[3].value("shardmesh_shards", "type", "counter") > 0 && started > 0 &&
			sumOver(ss, "shardmesh_handoffs_total", "type", "counter", "cause", "rebalance", "outcome", "completed") == started
	})
	completed := sumOver(ss, "shardmesh_handoffs_total", "type", "counter", "cause", "rebalance", "outcome", "completed")
	t.Logf("after m4 joined: rebalance rounds %v, moves %v, handoffs completed %v; shards per member %v %v %v %v; entity stops %v",
		sumOver(ss, "shardmesh_rebalance_rounds_total", "type", "counter"), sumOver(ss, "shardmesh_rebalance_moves_total", "type", "counter"), completed,
		ss[0].value("shardmesh_shards", "type", "counter"), ss[1].value("shardmesh_shards", "type", "counter"),
		ss[2].value("shardmesh_shards", "type", "counter"), ss[3].value("shardmesh_shards", "type", "counter"),
		sumOver(ss, "shardmesh_entity_stops_total", "type", "counter"))
	if !moved {
		t.Fatalf("no rebalance handoff to m4 completed (shards on m4 %v, started %v, completed %v)", ss[3].value("shardmesh_shards", "type", "counter"),
			sumOver(ss, "shardmesh_handoffs_started_total", "type", "counter"), completed)
	}
	if got := sumOver(ss, "shardmesh_rebalance_moves_total", "type", "counter"); got < completed {
		t.Errorf("rebalance moves %v, fewer than the %v rebalance handoffs completed", got, completed)
	}
	if got := sumOver(ss, "shardmesh_handoff_duration_seconds", "type", "counter", "cause", "rebalance"); got != completed {
		t.Errorf("handoff durations observed: %v, want one per completed handoff (%v)", got, completed)
	}
	if got := sumOver(ss, "shardmesh_handoff_phase_duration_seconds", "type", "counter", "phase", "stopping"); got != completed {
		t.Errorf("stopping phases observed: %v, want one per completed handoff (%v)", got, completed)
	}
	if got := sumOver(ss, "shardmesh_entity_stops_total", "type", "counter"); got == 0 {
		t.Error("no entity stopped though its shard moved")
	}
	if got := sumOver(ss, "shardmesh_entity_passivations_total", "type", "counter"); got != 0 {
		t.Errorf("%v passivations counted; the only stops were handoffs", got)
	}
	// Every counter answers again, from wherever its shard is now: 50 more messages routed
	// to entities, and the shard gauges agree with the allocation.
	routedBefore := sumOver(ss, "shardmesh_messages_routed_total", "type", "counter", "route", "local")
	if _, errs := askAll(cl, names, "get"); len(errs) > 0 {
		t.Fatalf("%d asks failed after the rebalance, first: %v", len(errs), errs[0])
	}
	settled = waitFor(5*time.Second, func() bool {
		ss = ss[:0]
		for _, d := range ds {
			ss = append(ss, d.scrapeMetrics())
		}
		return sumOver(ss, "shardmesh_shards", "type", "counter") == sumOver(ss, "shardmesh_coordinator_allocated_shards", "type", "counter")
	})
	if !settled {
		t.Errorf("after the rebalance, shards hosted %v, allocated %v", sumOver(ss, "shardmesh_shards", "type", "counter"),
			sumOver(ss, "shardmesh_coordinator_allocated_shards", "type", "counter"))
	}
	if got := sumOver(ss, "shardmesh_messages_routed_total", "type", "counter", "route", "local") - routedBefore; got != entities {
		t.Errorf("messages routed to entities after the rebalance: %v, want %d", got, entities)
	}
}

// checkJSONLog: with --log-format json every line d wrote is a JSON object with a level and
// a message, and the member's lines carry its node key.
func checkJSONLog(t *testing.T, d *daemon) {
	t.Helper()
	withNode := 0
	lines := strings.Split(strings.TrimSpace(d.log.String()), "\n")
	for _, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("%s: a log line is not JSON (%v): %s", d.name, err, line)
			continue
		}
		if rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("%s: a log line without level or msg: %s", d.name, line)
		}
		if rec["node"] != nil {
			withNode++
		}
	}
	if withNode == 0 {
		t.Errorf("%s: no log line names the node:\n%s", d.name, d.log.String())
	}
}

// TestMetricsListenBad: an address the daemon cannot listen on stops it at start with the
// usage exit code and a line naming the flag.
func TestMetricsListenBad(t *testing.T) {
	c := newCluster(t)
	d := c.spawn("m1", "--metrics-listen", "127.0.0.1:notaport")
	code, ok := d.wait(10 * time.Second)
	if !ok || code != 2 {
		t.Fatalf("exited=%v code=%d, want exit code 2:\n%s", ok, code, d.log.String())
	}
	if !strings.Contains(d.log.String(), `metrics-listen \"127.0.0.1:notaport\"`) && !strings.Contains(d.log.String(), `metrics-listen "127.0.0.1:notaport"`) {
		t.Errorf("the error does not name the flag and its value:\n%s", d.log.String())
	}
	if _, err := os.Stat(filepath.Join(d.dir, "metrics-addr")); err == nil {
		t.Error("metrics-addr written though nothing is served")
	}
}

// getProbe GETs path on d's metrics listener and returns the status code and the JSON
// body's reasons.
func (d *daemon) getProbe(path string) (int, []string) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.metricsAddr()+path, nil)
	if err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", d.name, path, err)
	}
	defer resp.Body.Close()
	var body struct {
		Live    bool     `json:"live"`
		Ready   bool     `json:"ready"`
		Reasons []string `json:"reasons"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		d.t.Fatalf("%s %s: body is not JSON: %v", d.name, path, err)
	}
	if (resp.StatusCode == http.StatusOK) != (body.Live && (body.Ready || path == "/healthz")) {
		d.t.Fatalf("%s %s: status %d disagrees with the body %+v", d.name, path, resp.StatusCode, body)
	}
	return resp.StatusCode, body.Reasons
}

// TestProbesFollowTheMember: /healthz answers 200 while the member lives; /readyz answers
// 503 with the reasons while the member waits for cluster.min-nr-of-members, and 200 once
// it is Up.
func TestProbesFollowTheMember(t *testing.T) {
	c := newCluster(t, "--metrics-listen", "127.0.0.1:0", "--entity-types", "counter", "--set", "cluster.min-nr-of-members=2")
	a := c.start("a")
	if code, reasons := a.getProbe("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz of a live member: %d %q", code, reasons)
	}
	code, reasons := a.getProbe("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(strings.Join(reasons, "; "), "not Up") {
		t.Fatalf("/readyz of a member waiting for a second one: %d %q, want 503 saying it is not Up", code, reasons)
	}
	t.Logf("/readyz while waiting: %q", reasons)
	if v := a.scrapeMetrics().value("shardmesh_build_info", "version", "dev"); v != 1 {
		t.Errorf("shardmesh_build_info{version=\"dev\"} = %v, want 1 (an unstamped build)", v)
	}
	b := c.start("b", "--join", a.addr())
	for _, d := range []*daemon{a, b} {
		if !waitFor(20*time.Second, func() bool { code, _ := d.getProbe("/readyz"); return code == http.StatusOK }) {
			_, reasons := d.getProbe("/readyz")
			t.Fatalf("/readyz of %s did not turn 200 once Up: %q", d.name, reasons)
		}
	}
}
