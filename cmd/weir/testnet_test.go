package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// testNet is a network of test hosts on this machine: each host is a
// network namespace with one veth into a bridge in the root namespace, on
// a /24 of its own. The root namespace has two addresses on the bridge:
// rootIP, where the test serves (etcd), and clientIP, the source of
// everything else the test sends (REST polls, weir run), so that cutting a
// host off etcd leaves the test's view of it intact.
//
// A cut is a blackhole route in a host's namespace: packets to the other
// side are dropped silently, as a partition drops them (no reset, no
// error: established connections stall and new ones time out), and a heal
// deletes the route, after which the stalled connections resume. Traffic
// never leaves the machine: the bridge has no other port.
type testNet struct {
	t        *testing.T
	bridge   string
	prefix   string // "10.N.M."
	rootIP   string
	clientIP string
	tag      string // the suffix of every name this net creates

	mu    sync.Mutex
	hosts []*netHost
	cuts  map[[2]string]bool // (namespace, address) blackholed
}

// netHost is one host of a testNet.
type netHost struct {
	name, ns, ip string
}

// newTestNet creates the bridge, or skips the test where it cannot (not
// root, no ip command, no bridge support). Everything it creates is
// removed when the test ends.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: it builds test hosts with ip netns, veth pairs and a bridge (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("ip (iproute2) not found: %v; apt-get install iproute2", err)
	}
	tag := fmt.Sprintf("%04x", rand.Uint32()&0xffff)
	n := &testNet{t: t, bridge: "wbr" + tag, tag: tag, cuts: map[[2]string]bool{}}
	// A /24 in 10.0.0.0/8 unlikely to be in use here or by a parallel run.
	n.prefix = fmt.Sprintf("10.%d.%d.", 100+rand.IntN(100), rand.IntN(250))
	n.rootIP, n.clientIP = n.prefix+"1", n.prefix+"254"
	if out, err := exec.Command("ip", "link", "add", n.bridge, "type", "bridge").CombinedOutput(); err != nil {
		t.Skipf("cannot create a bridge (%v: %s): this test needs Linux bridges and network namespaces", err, out)
	}
	t.Cleanup(n.close)
	// A bridge whose address was never set takes the lowest address of
	// its ports, so adding a host can change it: the hosts already
	// running then send to an address nobody owns until their ARP entry
	// for the root expires (tens of seconds), which looks exactly like a
	// partition nobody made (a leader losing etcd at job start). A fixed,
	// locally administered address stays.
	n.ip("link", "set", n.bridge, "address", fmt.Sprintf("02:77:%02x:%02x:00:01", rand.IntN(256), rand.IntN(256)))
	n.ip("addr", "add", n.rootIP+"/24", "dev", n.bridge)
	n.ip("addr", "add", n.clientIP+"/24", "dev", n.bridge)
	n.ip("link", "set", n.bridge, "up")
	// The test's own connections leave from clientIP.
	n.ip("route", "replace", n.prefix+"0/24", "dev", n.bridge, "src", n.clientIP)
	return n
}

// ip runs the ip command and fails the test if it fails.
func (n *testNet) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// host adds a host named name (a few letters: interface names are short).
func (n *testNet) host(name string) *netHost {
	n.t.Helper()
	n.mu.Lock()
	h := &netHost{name: name, ns: "w" + name + n.tag, ip: fmt.Sprintf("%s%d", n.prefix, 2+len(n.hosts))}
	n.hosts = append(n.hosts, h)
	n.mu.Unlock()
	outer, inner := "v"+name+n.tag, "eth0"
	n.ip("netns", "add", h.ns)
	n.ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", h.ns)
	n.ip("link", "set", outer, "master", n.bridge)
	n.ip("link", "set", outer, "up")
	n.ip("-n", h.ns, "addr", "add", h.ip+"/24", "dev", inner)
	n.ip("-n", h.ns, "link", "set", inner, "up")
	n.ip("-n", h.ns, "link", "set", "lo", "up")
	return h
}

// drop makes host h drop everything it sends to addr.
func (n *testNet) drop(h *netHost, addr string) {
	n.t.Helper()
	n.mu.Lock()
	k := [2]string{h.ns, addr}
	had := n.cuts[k]
	n.cuts[k] = true
	n.mu.Unlock()
	if !had {
		n.ip("-n", h.ns, "route", "add", "blackhole", addr+"/32")
	}
}

// cut partitions a and b both ways.
func (n *testNet) cut(a, b *netHost) {
	n.t.Helper()
	n.drop(a, b.ip)
	n.drop(b, a.ip)
}

// heal removes every cut.
func (n *testNet) heal() {
	n.t.Helper()
	n.mu.Lock()
	cuts := n.cuts
	n.cuts = map[[2]string]bool{}
	n.mu.Unlock()
	for k := range cuts {
		n.ip("-n", k[0], "route", "del", "blackhole", k[1]+"/32")
	}
}

// close deletes the namespaces (and with them their veths) and the
// bridge; the processes in them were killed by their own cleanups, which
// run first.
func (n *testNet) close() {
	for _, h := range n.hosts {
		if out, err := exec.Command("ip", "netns", "del", h.ns).CombinedOutput(); err != nil {
			n.t.Logf("ip netns del %s: %v: %s", h.ns, err, out)
		}
	}
	if out, err := exec.Command("ip", "link", "del", n.bridge).CombinedOutput(); err != nil {
		n.t.Logf("ip link del %s: %v: %s", n.bridge, err, out)
	}
}
