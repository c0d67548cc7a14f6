package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// span is what the receiver keeps of one exported span.
type span struct {
	trace, id, parent string
	name              string
	start             time.Time
	instance          string // the resource's service.instance.id: the member's data directory
	attrs             map[string]string
}

// otlpReceiver is an in-process OTLP/HTTP trace receiver (protobuf, as the exporters send).
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	return r
}

func (r *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		instance := attrs(rs.GetResource().GetAttributes())["service.instance.id"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, span{trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId), parent: hex.EncodeToString(s.ParentSpanId),
					name: s.Name, start: time.Unix(0, int64(s.StartTimeUnixNano)), instance: instance, attrs: attrs(s.Attributes)})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = io.Copy(w, bytes.NewReader(out))
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.Key] = kv.GetValue().GetStringValue()
	}
	return out
}

func (r *otlpReceiver) all() []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...)
}

// TestOneAskAcrossTwoMembersIsOneTrace: two real daemons export their spans over OTLP/HTTP
// (configured only with OTEL_* variables) to a receiver in the test. An ask made on m1 to
// a counter whose shard lives on m2 gives one trace: the ask's span on m1, its routing there
// (remote), its routing on m2 (local), the entity's handling on m2 and the save of its
// state, each a child of the one before.
func TestOneAskAcrossTwoMembersIsOneTrace(t *testing.T) {
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.url)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_SERVICE_NAME", "tracing-e2e")
	c := newCluster(t, shardingFlags...)
	m1 := c.start("m1")
	m2 := c.start("m2", "--join", m1.addr())
	ds := []*daemon{m1, m2}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 2) }) {
		t.Fatal("cluster did not form")
	}
	ctl := func(d *daemon, args ...string) run {
		o, e, code := shardctl(append([]string{args[0], "--data-dir", d.dir}, args[1:]...)...)
		return run{args: args, out: o, err: e, code: code}
	}
	var id string
	for i := 0; id == "" && i < 100; i++ {
		cand := "traced-" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		if r := ctl(m1, "ask", "counter", cand, "get"); r.code != 0 {
			t.Fatalf("%v", r)
		}
		loc := decode[struct {
			Home string `json:"home"`
		}](t, ctl(m1, "locate", "counter", cand, "--json"))
		if loc.Home == m2.peerID() {
			id = cand
		}
	}
	if id == "" {
		t.Fatal("no counter of 100 is at home on m2")
	}
	asked := time.Now()
	if r := ctl(m1, "ask", "counter", id, "inc"); r.code != 0 || strings.TrimSpace(r.out) != "1" {
		t.Fatalf("inc: %v", r)
	}

	// The ask's span on m1 names its trace.
	var askTrace string
	byName := func(spans []span, trace, name, instance string) *span {
		for i := range spans {
			s := &spans[i]
			if s.trace == trace && s.name == name && (instance == "" || s.instance == instance) {
				return s
			}
		}
		return nil
	}
	var spans []span
	ok := waitFor(20*time.Second, func() bool {
		spans = recv.all()
		for _, s := range spans {
			if s.name == "shardmesh.ask counter" && s.attrs["shardmesh.entity"] == id && !s.start.Before(asked.Add(-time.Second)) && s.instance == m1.dir {
				askTrace = s.trace
			}
		}
		return askTrace != "" && byName(spans, askTrace, "shardmesh.store.save", m2.dir) != nil
	})
	if !ok {
		var names []string
		for _, s := range spans {
			names = append(names, s.name+"@"+s.instance)
		}
		t.Fatalf("no trace of the ask with the save on m2 within 20 s (trace %q); spans: %v", askTrace, names)
	}
	ask := byName(spans, askTrace, "shardmesh.ask counter", m1.dir)
	var routes []*span
	for i := range spans {
		if spans[i].trace == askTrace && spans[i].name == "shardmesh.route" {
			routes = append(routes, &spans[i])
		}
	}
	receive := byName(spans, askTrace, "shardmesh.receive counter", m2.dir)
	save := byName(spans, askTrace, "shardmesh.store.save", m2.dir)
	if len(routes) != 2 || receive == nil {
		t.Fatalf("trace %s: %d route spans (want 2: on m1 and m2), receive %v", askTrace, len(routes), receive)
	}
	first, second := routes[0], routes[1]
	if first.instance != m1.dir {
		first, second = second, first
	}
	switch {
	case first.instance != m1.dir || first.parent != ask.id || first.attrs["shardmesh.route"] != "remote":
		t.Errorf("routing on m1: %+v (ask span %s)", *first, ask.id)
	case second.instance != m2.dir || second.parent != first.id || second.attrs["shardmesh.route"] != "local":
		t.Errorf("routing on m2: %+v (m1's routing span %s)", *second, first.id)
	case receive.parent != second.id || save.parent != receive.id:
		t.Errorf("the handling %+v and the save %+v do not hang from m2's routing %s", *receive, *save, second.id)
	}
	// No other trace has m2 handling the inc: one ask, one trace.
	for _, s := range spans {
		if s.name == "shardmesh.store.save" && s.instance == m2.dir && s.trace != askTrace && !s.start.Before(asked) {
			t.Errorf("another trace %s saved on m2 after the ask", s.trace)
		}
	}
}
