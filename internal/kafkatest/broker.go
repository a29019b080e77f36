// Package kafkatest runs real Apache Kafka brokers for weir's tests: the
// broker started once per machine by .ci/kafka.sh (Shared), and brokers a
// test starts, kills and restarts itself (Start). Both come from the jars
// .ci/kafka.sh resolves from Maven Central (org.apache.kafka:kafka_2.13,
// KRaft, combined broker and controller, one node).
//
// A test that needs a real broker skips, with a message naming the
// script, where there is no Java or no jars: the in-process fake (kfake)
// tests run everywhere, the real-broker tests wherever .ci/run has run.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testutil"
)

// DefaultCache is where .ci/kafka.sh puts the broker's jars ("libs" links
// to the complete copy); WEIR_KAFKA_CACHE moves it.
const DefaultCache = "/var/cache/weir-ci/kafka"

// SharedAddr is the address of the broker .ci/kafka.sh starts;
// WEIR_KAFKA_BROKERS names another cluster.
const SharedAddr = "127.0.0.1:9092"

// startTimeout bounds a broker's start, formatting included: a cold JVM on
// a loaded two-core machine takes a few seconds.
const startTimeout = 90 * time.Second

// Libs returns the folder holding the broker's jars, or an error that says
// how to get them.
func Libs() (string, error) {
	if _, err := exec.LookPath("java"); err != nil {
		return "", errors.New("no java on PATH: the real Kafka broker needs Java 17 (bash .ci/kafka.sh installs it)")
	}
	cache := os.Getenv("WEIR_KAFKA_CACHE")
	if cache == "" {
		cache = DefaultCache
	}
	libs := filepath.Join(cache, "libs")
	jars, _ := filepath.Glob(filepath.Join(libs, "kafka_2.13-*.jar"))
	if len(jars) == 0 {
		return "", fmt.Errorf("no Kafka broker jars in %s: run bash .ci/kafka.sh (it resolves them from Maven Central)", libs)
	}
	return libs, nil
}

// Shared returns the seed brokers of the shared real cluster: those in
// WEIR_KAFKA_BROKERS, or the broker .ci/kafka.sh runs on SharedAddr. It
// skips the test when neither answers. Tests that share it create topics
// and transactional ids of their own.
func Shared(t testing.TB) []string {
	t.Helper()
	if env := os.Getenv("WEIR_KAFKA_BROKERS"); env != "" {
		return strings.Split(env, ",")
	}
	c, err := net.DialTimeout("tcp", SharedAddr, 2*time.Second)
	if err != nil {
		t.Skipf("no Kafka broker on %s (%v): start it with bash .ci/kafka.sh", SharedAddr, err)
	}
	c.Close()
	return []string{SharedAddr}
}

// Broker is a real Kafka broker a test started: one JVM process, on its own
// ports and data folder, killed at the end of the test.
type Broker struct {
	t      testing.TB
	libs   string
	dir    string
	port   int // the client listener the broker binds
	inter  int // the inter-broker listener: the broker's own traffic (transaction markers) bypasses a proxy
	ctrl   int // the KRaft controller listener
	advert string
	props  map[string]string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}        // closed once the process has ended and been reaped
	out    *testutil.SyncBuffer // the process's stdout and stderr, for failures
}

// Option changes a broker Start starts.
type Option func(*Broker)

// WithProperty sets a broker property (server.properties), overriding
// the defaults, e.g. transaction.max.timeout.ms.
func WithProperty(key, value string) Option {
	return func(b *Broker) { b.props[key] = value }
}

// Advertise makes the broker tell clients to connect to addr instead of
// the address it listens on: a proxy in front of it (the proxy forwards
// to Broker.ListenAddr).
func Advertise(addr string) Option {
	return func(b *Broker) { b.advert = addr }
}

// Start formats a data folder and starts a broker on free loopback ports,
// returning once it answers metadata requests. It skips the test when
// there is no Java or no jars (see Libs).
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	libs, err := Libs()
	if err != nil {
		t.Skip(err)
	}
	b := &Broker{t: t, libs: libs, dir: t.TempDir(), port: freePort(t), inter: freePort(t), ctrl: freePort(t), props: defaultProps()}
	for _, o := range opts {
		o(b)
	}
	if b.advert == "" {
		b.advert = b.ListenAddr()
	}
	if err := b.writeConfig(); err != nil {
		t.Fatal(err)
	}
	if err := b.format(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Kill)
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	return b
}

// defaultProps are the settings of a one-node test cluster: replication
// factors of one, few internal partitions (a faster start), no rebalance
// delay, timed-out transactions aborted within a second of their timeout
// rather than ten, and a short broker session: after a SIGKILL the
// controller accepts the restarted broker's registration only once the
// old session expired (9 s by default).
func defaultProps() map[string]string {
	return map[string]string{
		"num.partitions":                                              "1",
		"offsets.topic.replication.factor":                            "1",
		"offsets.topic.num.partitions":                                "4",
		"transaction.state.log.replication.factor":                    "1",
		"transaction.state.log.min.isr":                               "1",
		"transaction.state.log.num.partitions":                        "4",
		"share.coordinator.state.topic.replication.factor":            "1",
		"share.coordinator.state.topic.min.isr":                       "1",
		"group.initial.rebalance.delay.ms":                            "0",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}
}

// Addrs returns the seed broker list clients use (the advertised address).
func (b *Broker) Addrs() []string { return []string{b.advert} }

// ListenAddr is the address the broker binds for clients.
func (b *Broker) ListenAddr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

func (b *Broker) writeConfig() error {
	props := maps.Clone(b.props)
	props["process.roles"] = "broker,controller"
	props["node.id"] = "1"
	props["controller.quorum.voters"] = fmt.Sprintf("1@127.0.0.1:%d", b.ctrl)
	props["listeners"] = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,INTERNAL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, b.inter, b.ctrl)
	props["advertised.listeners"] = fmt.Sprintf("PLAINTEXT://%s,INTERNAL://127.0.0.1:%d", b.advert, b.inter)
	props["controller.listener.names"] = "CONTROLLER"
	props["listener.security.protocol.map"] = "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
	props["inter.broker.listener.name"] = "INTERNAL"
	props["log.dirs"] = filepath.Join(b.dir, "log")
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, props[k])
	}
	return os.WriteFile(filepath.Join(b.dir, "server.properties"), []byte(sb.String()), 0o644)
}

// format writes the KRaft metadata of a new one-node cluster into the
// data folder (kafka-storage.sh format).
func (b *Broker) format() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", b.libs+"/*", "kafka.tools.StorageTool", "format",
		"-t", clusterID(), "-c", filepath.Join(b.dir, "server.properties"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kafka-storage format %s: %w\n%s", b.dir, err, out)
	}
	return nil
}

// clusterID is a new KRaft cluster id: 16 random bytes in URL-safe
// base64 without padding, what kafka-storage random-uuid prints. Like
// Kafka's own, it never starts with '-': kafka-storage's argument parser
// takes such a value for an option ("--cluster-id: expected one
// argument"), which failed 1 start in 64.
func clusterID() string {
	for {
		var id [16]byte
		_, _ = rand.Read(id[:])
		if s := base64.RawURLEncoding.EncodeToString(id[:]); s[0] != '-' {
			return s
		}
	}
}

// Restart starts the broker process again on the same ports and data (the
// first start too); it returns once the broker answers, or an error (the
// broker is then killed). It may be called from any goroutine.
func (b *Broker) Restart() error {
	b.mu.Lock()
	if b.cmd != nil {
		b.mu.Unlock()
		return errors.New("kafkatest: Restart of a running broker; Kill it first")
	}
	out := &testutil.SyncBuffer{}
	cmd := exec.Command("java", "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC",
		"-Dkafka.logs.dir="+b.dir, "-Dlog4j2.configurationFile="+filepath.Join(b.libs, "log4j2.properties"),
		"-cp", b.libs+"/*", "kafka.Kafka", filepath.Join(b.dir, "server.properties"))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := cmd.Start(); err != nil {
		b.mu.Unlock()
		return fmt.Errorf("start kafka broker: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.cmd, b.out, b.exited = cmd, out, exited
	b.mu.Unlock()
	began := time.Now()
	if err := b.waitReady(exited); err != nil {
		b.Kill()
		return fmt.Errorf("kafka broker on %s: %w\n%s\nlog: %s", b.ListenAddr(), err, out, filepath.Join(b.dir, "server.log"))
	}
	b.t.Logf("kafka broker ready on %s after %v", b.ListenAddr(), time.Since(began).Round(time.Millisecond))
	return nil
}

// waitReady polls the broker with metadata requests until it lists itself.
func (b *Broker) waitReady(exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("the broker exited while starting")
		default:
		}
		if b.ping() == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v", startTimeout)
}

// ping asks the broker itself (not the advertised address: a proxy may be
// paused) for its metadata.
func (b *Broker) ping() error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddr()), kgo.DialTimeout(time.Second))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return cl.Ping(ctx)
}

// Kill ends the broker with SIGKILL, as a crash would (no controlled
// shutdown, log segments not flushed), and waits until its ports are free.
// A broker not running is left alone.
func (b *Broker) Kill() {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd, b.exited = nil, nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
	waitPortFree(b.port)
	waitPortFree(b.inter)
	waitPortFree(b.ctrl)
}

// Output returns what the broker process printed (the log proper is in
// server.log in its data folder).
func (b *Broker) Output() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.out == nil {
		return ""
	}
	return b.out.String()
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitPortFree(port int) {
	for i := 0; i < 100; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
