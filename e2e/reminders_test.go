package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReminderFiresOnTheNewHome on 3 real daemons: `inc-after 5s` registers a durable
// reminder of a counter (shardctl reminders lists it), then its home is killed with SIGKILL
// at once. While the dead home
// is still allocated, locate cannot reach it: alive is unknown (never "no"), exit 3. After
// the firing time the counter reads 1, incremented on the new home, and exactly once:
// every member's entity journal holds one acknowledged change of it, and the reminder is
// gone from the store (shardctl reminders).
func TestReminderFiresOnTheNewHome(t *testing.T) {
	c := newCluster(t, append(shardingFlags,
		"--set", "cluster.failure-detector.heartbeat-interval=250ms",
		"--set", "cluster.failure-detector.expected-response-after=250ms",
		"--set", "cluster.failure-detector.acceptable-heartbeat-pause=1500ms",
		"--set", "cluster.down-removal-margin=500ms")...)
	var ds []*daemon
	for i, name := range []string{"m1", "m2", "m3"} {
		args := []string{"--entity-journal", filepath.Join(c.root, name+".journal")}
		if i > 0 {
			args = append(args, "--join", ds[0].addr())
		}
		ds = append(ds, c.start(name, args...))
	}
	if !waitFor(10*time.Second, func() bool { return allAgree(ds, 3) }) {
		t.Fatal("cluster did not form")
	}
	ctl := func(d *daemon, args ...string) run {
		o, e, code := shardctl(append([]string{args[0], "--data-dir", d.dir}, args[1:]...)...)
		return run{args: args, out: o, err: e, code: code}
	}
	// A counter whose shard is at home on m2 or m3 (m1, the oldest, runs the coordinator).
	var id string
	var home *daemon
	for i := 0; home == nil && i < 100; i++ {
		id = fmt.Sprintf("alarm-%d", i)
		if r := ctl(ds[0], "ask", "counter", id, "get"); r.code != 0 {
			t.Fatalf("%v", r)
		}
		loc := decode[struct {
			Home string `json:"home"`
		}](t, ctl(ds[0], "locate", "counter", id, "--json"))
		for _, d := range ds[1:] {
			if d.peerID() == loc.Home {
				home = d
			}
		}
	}
	if home == nil {
		t.Fatal("no counter of 100 is at home on m2 or m3")
	}

	// The home takes the registration after it was sent, and fires it 5 s after it took it:
	// not before due (the registration's answer arrives later, so it cannot bound it).
	due := time.Now().Add(5 * time.Second)
	r := ctl(ds[0], "ask", "counter", id, "inc-after 5s")
	if r.code != 0 || strings.TrimSpace(r.out) != "0" {
		t.Fatalf("inc-after: %v", r)
	}
	if r := ctl(ds[0], "reminders", "--type", "counter", "--entity", id); r.code != 0 || !strings.Contains(r.out, "inc-after-") || !strings.Contains(r.out, `"inc"`) {
		t.Fatalf("reminders: %v", r)
	}
	home.kill()
	killed := time.Now()
	survivor := ds[0]

	// The dead home is still allocated until it is downed: locate cannot ask it.
	if r := ctl(survivor, "locate", "counter", id, "--json"); r.code == 3 {
		loc := decode[struct {
			Alive    *bool `json:"alive"`
			Complete bool  `json:"complete"`
		}](t, r)
		if loc.Alive != nil || loc.Complete {
			t.Errorf("locate with the home dead: alive %v complete %v, want unknown (null), incomplete:\n%v", loc.Alive, loc.Complete, r)
		}
		if text := ctl(survivor, "locate", "counter", id); text.code == 3 && !strings.Contains(text.out, "unknown (the home did not answer)") {
			t.Errorf("locate with the home dead says:\n%v", text)
		}
	} else {
		t.Logf("locate answered exit %d right after the kill (the home was already removed?):\n%v", r.code, r)
	}

	// It fires on the new home: the counter reads 1, the reminder is gone.
	if !waitFor(60*time.Second, func() bool {
		g := ctl(survivor, "ask", "counter", id, "get")
		if g.code != 0 || strings.TrimSpace(g.out) != "1" {
			return false
		}
		l := ctl(survivor, "reminders", "--type", "counter", "--entity", id, "--json")
		return l.code == 0 && strings.TrimSpace(l.out) == "[]"
	}) {
		t.Fatalf("the counter did not read 1 with the reminder gone within 60 s of the kill: %v",
			ctl(survivor, "reminders", "--type", "counter", "--entity", id))
	}
	fired := time.Since(killed)
	acks := 0
	for _, name := range []string{"m1", "m2", "m3"} {
		for _, rec := range journalOf(t, filepath.Join(c.root, name+".journal")) {
			if rec.Event != "ack" || rec.Entity != id {
				continue
			}
			acks++
			if rec.Node == home.peerID() || rec.Value != 1 || time.Unix(0, rec.Wall).Before(due) {
				t.Errorf("the increment: %+v (home killed: %s, due %v)", rec, home.peerID(), due)
			}
		}
	}
	if acks != 1 {
		t.Fatalf("%d acknowledged changes of %s in the journals, want exactly 1", acks, id)
	}
	if g := ctl(survivor, "ask", "counter", id, "get"); strings.TrimSpace(g.out) != "1" {
		t.Fatalf("the counter after: %v", g)
	}
	t.Logf("fired on the new home and acknowledged %v after the kill (due 5 s after the registration)", fired.Round(100*time.Millisecond))
}

type journalRecord struct {
	Event  string `json:"ev"`
	Entity string `json:"id"`
	Node   string `json:"node"`
	Value  int64  `json:"v"`
	Wall   int64  `json:"wall"`
}

// journalOf reads an entity journal (--entity-journal); none when the file is missing.
func journalOf(t *testing.T, path string) []journalRecord {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []journalRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r journalRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out
}
