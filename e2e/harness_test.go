package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var bin string // directory holding the built sharddaemon and shardctl

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "shardmesh-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir, "../cmd/sharddaemon", "../cmd/shardctl")
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build:", err)
		os.Exit(1)
	}
	bin = dir
	// Away from the user's saved contexts (shardctl context): the tests name every member.
	os.Setenv("SHARDMESH_CONTEXTS", filepath.Join(dir, "contexts.yaml"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is one sharddaemon process.
type daemon struct {
	t       *testing.T
	name    string
	dir     string
	key     string // the cluster key file, if the daemon has one
	cmd     *exec.Cmd
	log     *lockedBuffer
	exited  chan struct{}
	exitErr error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cluster is a set of daemons sharing a temporary root and optional extra flags.
type cluster struct {
	t       *testing.T
	root    string
	flags   []string
	key     string // the --cluster-key file among flags, if any: shardctl calls pass it too
	daemons map[string]*daemon
	retired []*daemon // earlier processes of restarted daemons, for their logs
}

func newCluster(t *testing.T, flags ...string) *cluster {
	c := &cluster{t: t, root: t.TempDir(), flags: flags, daemons: map[string]*daemon{}}
	for i, f := range flags {
		if f == "--cluster-key" && i+1 < len(flags) {
			c.key = flags[i+1]
		}
	}
	t.Cleanup(func() {
		for _, d := range c.daemons {
			d.kill()
		}
		if t.Failed() {
			for _, d := range c.retired {
				t.Logf("--- log of %s (an earlier process):\n%s", d.name, d.log.String())
			}
			for name, d := range c.daemons {
				t.Logf("--- log of %s:\n%s", name, d.log.String())
			}
		}
	})
	return c
}

// start starts daemon name (its data directory is root/name) with the cluster's flags plus
// args, and waits until it has written its addrs file. A restart removes the addrs file of
// the previous process first (a killed one leaves it behind), or it would pass for the new
// one's.
func (c *cluster) start(name string, args ...string) *daemon {
	c.t.Helper()
	if err := os.Remove(filepath.Join(c.root, name, "addrs")); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.t.Fatal(err)
	}
	d := c.spawn(name, args...)
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(filepath.Join(d.dir, "addrs")); return err == nil }) {
		c.t.Fatalf("%s did not start listening:\n%s", name, d.log.String())
	}
	return d
}

// spawn starts a daemon without waiting for it.
func (c *cluster) spawn(name string, args ...string) *daemon {
	c.t.Helper()
	return c.spawnIn(name, filepath.Join(c.root, name), args...)
}

// spawnIn starts a daemon on data directory dir without waiting for it.
func (c *cluster) spawnIn(name, dir string, args ...string) *daemon {
	c.t.Helper()
	if prev := c.daemons[name]; prev != nil { // a restart: the log goes on from the last process's
		c.retired = append(c.retired, prev)
	}
	d := &daemon{t: c.t, name: name, dir: dir, key: c.key, log: &lockedBuffer{}, exited: make(chan struct{})}
	all := append([]string{"--data-dir", d.dir, "--listen", "/ip4/127.0.0.1/tcp/0"}, c.flags...)
	d.cmd = exec.Command(filepath.Join(bin, "sharddaemon"), append(all, args...)...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { d.exitErr = d.cmd.Wait(); close(d.exited) }()
	c.daemons[name] = d
	return d
}

// addr returns the first dialable address of a started daemon.
func (d *daemon) addr() string {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.dir, "addrs"))
	if err != nil {
		d.t.Fatal(err)
	}
	return strings.Fields(string(data))[0]
}

func (d *daemon) peerID() string {
	a := d.addr()
	return a[strings.LastIndex(a, "/")+1:]
}

func (d *daemon) signal(sig syscall.Signal) {
	if d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(sig) // it may have exited already
	}
}

func (d *daemon) kill() {
	d.signal(syscall.SIGKILL)
	<-d.exited
}

// wait waits for the process to exit and returns its exit code.
func (d *daemon) wait(timeout time.Duration) (int, bool) {
	select {
	case <-d.exited:
		if ee, ok := d.exitErr.(*exec.ExitError); ok {
			return ee.ExitCode(), true
		}
		return 0, true
	case <-time.After(timeout):
		return 0, false
	}
}

// shardctl runs shardctl with args and returns stdout, stderr and the exit code.
func shardctl(args ...string) (string, string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "shardctl"), args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	return out.String(), errOut.String(), code
}

type memberInfo struct {
	Node      string `json:"node"`
	Status    string `json:"status"`
	UpNumber  uint64 `json:"up_number"`
	Reachable bool   `json:"reachable"`
	Oldest    bool   `json:"oldest"`
}

type membersView struct {
	Self      string       `json:"self"`
	Oldest    string       `json:"oldest"`
	Converged bool         `json:"converged"`
	Members   []memberInfo `json:"members"`
}

// ctl returns the arguments of a shardctl command that talks to d: --data-dir and, when the
// cluster has one, --cluster-key (before the command, as global flags), then args.
func (d *daemon) ctl(args ...string) []string {
	global := []string{"--data-dir", d.dir}
	if d.key != "" {
		global = append(global, "--cluster-key", d.key)
	}
	return append(global, args...)
}

// members asks d for its member list; ok is false when d does not answer.
func (d *daemon) members(extra ...string) (membersView, bool) {
	out, _, code := shardctl(append(d.ctl("members", "--json", "--timeout", "2s"), extra...)...)
	var v membersView
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		return v, false
	}
	return v, true
}

func (v membersView) status(id string) string {
	for _, m := range v.Members {
		if m.Node == id {
			return m.Status
		}
	}
	return ""
}

func (v membersView) reachable(id string) bool {
	for _, m := range v.Members {
		if m.Node == id {
			return m.Reachable
		}
	}
	return false
}

func (v membersView) count(status string) int {
	n := 0
	for _, m := range v.Members {
		if m.Status == status {
			n++
		}
	}
	return n
}

// waitFor polls cond every 50 ms until it holds or timeout passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// everyone asks every daemon in ds at once (so a poll costs one shardctl round trip, not
// len(ds)) and reports whether all answer and satisfy cond.
func everyone(ds []*daemon, cond func(membersView) bool) bool {
	results := make(chan bool, len(ds))
	for _, d := range ds {
		go func() {
			v, ok := d.members()
			results <- ok && cond(v)
		}()
	}
	all := true
	for range ds {
		all = <-results && all
	}
	return all
}
