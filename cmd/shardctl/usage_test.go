package main

import (
	"strings"
	"testing"

	"github.com/shardmesh/shardmesh/admin/adminpb"
	"github.com/shardmesh/shardmesh/internal/cmdline"
)

// TestBadInputIsOneLineExitTwo: bad input is refused before any member is asked, in one
// line naming the problem, with exit code 2.
func TestBadInputIsOneLineExitTwo(t *testing.T) {
	node := []string{"--node", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWJj2DY3nGiJfExXY3qJsk2KXm2LqJpSFNCrzxzsteCcLB"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"locate", "counter"}, "locate needs TYPE ENTITY_ID"},
		{[]string{"locate", "counter", ""}, "ENTITY_ID: entity id is empty"},
		{[]string{"locate", "counter", strings.Repeat("x", 2000)}, "at most 1024"},
		{[]string{"locate", "counter", "\xff"}, "not valid UTF-8"},
		{[]string{"locate", "counter", "u1", "--bogus"}, "unknown flag --bogus"},
		{[]string{"ask", "counter", "", "get"}, "entity id is empty"},
		{[]string{"health", "--wait", "banana"}, "banana"},
		{[]string{"health", "--wait", "-1s"}, "must not be negative"},
		{[]string{"stats", "--query-timeout", "0s"}, "must be positive"},
		{[]string{"watch", "--for", "soon"}, "soon"},
		{[]string{"bench"}, "needs --type"},
		{[]string{"bench", "--type", "counter", "--concurrency", "1000"}, "between 1 and 64"},
		{[]string{"bench", "--type", "counter", "--ask", "--tell"}, "exclude each other"},
		{[]string{"bench", "--type", "counter", "--duration", "0s"}, "must be positive"},
		{[]string{"shutdown", "extra"}, "unexpected argument"},
		{[]string{"down"}, "down needs NODE"},
		{[]string{"leave", "a", "b"}, "leave needs NODE"},
		{[]string{"members", "--timeout", "-3s"}, "must be positive"},
		{[]string{"members"}, "which member?"},
		{[]string{"members", "--node", "…Xy3k"}, "to name a member by its peer id, also give --data-dir"},
	} {
		args := c.args
		if c.want != "which member?" && !strings.Contains(c.want, "name a member") {
			args = append(append([]string{}, c.args...), node...)
		}
		out, errOut, code := runShardctl(t, args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("shardctl %s: exit %d, stderr %q, stdout %q; want exit 2 and one line with %q", strings.Join(c.args, " "), code, errOut, out, c.want)
		}
	}
}

func TestFindMember(t *testing.T) {
	view := &adminpb.MembersResponse{Self: "12D3KooWAAAAxyz1", Members: []*adminpb.MemberInfo{
		{Node: "12D3KooWAAAAxyz1", Status: "Up"},
		{Node: "12D3KooWBBBBxyz2", Status: "Up"},
		{Node: "12D3KooWCCCCabc3", Status: "Removed"},
	}}
	for name, want := range map[string]string{
		"12D3KooWBBBBxyz2": "12D3KooWBBBBxyz2",
		"…BBBBxyz2":        "12D3KooWBBBBxyz2",
		"xyz1":             "12D3KooWAAAAxyz1",
	} {
		m, err := findMember(view, name, false)
		if err != nil || m.Node != want {
			t.Errorf("%s: %v %v", name, m, err)
		}
	}
	for name, want := range map[string]string{
		"abc3":  "was Removed from the cluster",
		"xyz":   "unknown member", // too short to match a suffix
		"nope!": "unknown member",
	} {
		if _, err := findMember(view, name, false); err == nil || !strings.Contains(err.Error(), want) || cmdline.ExitCode(err, exitFailed) != exitUsage {
			t.Errorf("%s: %v", name, err)
		}
	}
	if m, err := findMember(view, "…abc3", true); err != nil || m.Status != "Removed" {
		t.Errorf("a Removed member for down: %v %v", m, err)
	}
	view.Members[1].Node = "12D3KooWBBBBxyz1"
	if _, err := findMember(view, "xyz1", false); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous: %v", err)
	}
}

func TestWatchLine(t *testing.T) {
	line := watchLine(&adminpb.WatchEvent{AtUnixMs: 0, Kind: "handoff-completed", EntityType: "counter", Shard: "7",
		From: "12D3KooWBBBBxyz2abcdefgh", Epoch: 1<<32 | 3, TookMs: 12})
	for _, want := range []string{"handoff-completed", "type=counter", "shard=7", "from=…abcdefgh", "epoch=1.3", "took=12ms"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
}

// TestGlobalFlagsBeforeTheCommand: flags written before the command name count as well as
// after it.
func TestGlobalFlagsBeforeTheCommand(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{{"--data-dir", dir, "health"}, {"health", "--data-dir", dir}, {"--data-dir", dir, "shard", "unpin", "counter", "1"}} {
		_, errOut, code := runShardctl(t, args...)
		if code != exitUsage || !strings.Contains(errOut, "no addrs in "+dir) {
			t.Errorf("%v: exit %d, %q: the --data-dir was not used", args, code, errOut)
		}
	}
}
