package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// network puts each member in a network namespace of its own, joined by a veth link to a
// bridge in the driver's namespace (which keeps reaching every member), and partitions
// members with blackhole routes inside their namespaces: a packet to the other side is
// dropped before it leaves, in both directions, while the driver still talks to both.
type network struct {
	id     string // short, unique per run: names of links and namespaces
	subnet string // "10.213.N."
	bridge string

	mu     sync.Mutex
	slots  []string            // namespace per member slot
	routes map[[2]int]struct{} // blackholed (from slot, to slot)
}

// netnsAvailable reports whether this process may create network namespaces and links
// (root with ip(8)), and why not.
func netnsAvailable() (bool, string) {
	if os.Geteuid() != 0 {
		return false, "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return false, "no ip(8)"
	}
	name := fmt.Sprintf("chaosprobe%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		return false, "ip netns add: " + strings.TrimSpace(string(out))
	}
	_ = exec.Command("ip", "netns", "del", name).Run()
	return true, ""
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// newNetwork makes the bridge and slots namespaces. id must be at most 6 characters
// (interface names are at most 15); subnet picks 10.213.subnet.0/24.
func newNetwork(id string, subnet, slots int) (*network, error) {
	n := &network{id: id, subnet: fmt.Sprintf("10.213.%d.", subnet), bridge: "cm" + id + "br", routes: map[[2]int]struct{}{}}
	if err := ipCmd("link", "add", n.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"addr", "add", n.subnet + "254/24", "dev", n.bridge},
		{"link", "set", n.bridge, "up"},
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			n.close()
			return nil, err
		}
	}
	for i := range slots {
		ns := fmt.Sprintf("chaos-%s-%d", id, i)
		veth := fmt.Sprintf("cm%sv%d", id, i)
		n.slots = append(n.slots, ns)
		steps := [][]string{
			{"netns", "add", ns},
			{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"link", "set", veth, "master", n.bridge, "up"},
			{"-n", ns, "addr", "add", n.ip(i) + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := ipCmd(s...); err != nil {
				n.close()
				return nil, err
			}
		}
	}
	return n, nil
}

// ip is the address of member slot i.
func (n *network) ip(i int) string { return fmt.Sprintf("%s%d", n.subnet, i+1) }

// command returns the command line that runs argv in slot i's namespace.
func (n *network) command(i int, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", n.slots[i]}, argv...)
}

// partition cuts every link between a side and b side (slots), both directions.
func (n *network) partition(a, b []int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			for _, r := range [][2]int{{x, y}, {y, x}} {
				if _, ok := n.routes[r]; ok {
					continue
				}
				if err := ipCmd("-n", n.slots[r[0]], "route", "add", "blackhole", n.ip(r[1])+"/32"); err != nil {
					return err
				}
				n.routes[r] = struct{}{}
			}
		}
	}
	return nil
}

// heal removes every cut.
func (n *network) heal() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	var first error
	for r := range n.routes {
		if err := ipCmd("-n", n.slots[r[0]], "route", "del", "blackhole", n.ip(r[1])+"/32"); err != nil && first == nil {
			first = err
		}
		delete(n.routes, r)
	}
	return first
}

// close deletes the namespaces (and with them the veth links) and the bridge.
func (n *network) close() {
	for _, ns := range n.slots {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", n.bridge).Run()
}
