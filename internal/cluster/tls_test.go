package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/security"
	"github.com/weirstream/weir/internal/security/securitytest"
	"github.com/weirstream/weir/internal/testutil"
)

// waitLog waits until the log holds every one of want.
func waitLog(t *testing.T, log *testutil.SyncBuffer, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := log.String()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log lacks %q:\n%s", want, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func wantErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q lacks %q", err, w)
		}
	}
}

// TestTLSRegistration: a Dispatcher with mutual TLS takes a TaskManager
// whose certificate its CA signed, and refuses, on both sides with the
// keys to set, one without TLS, one without a certificate, one with a
// certificate of another CA and one that trusts another CA.
func TestTLSRegistration(t *testing.T) {
	good, caA := securitytest.InternalTLS(t, nil)
	foreign, caB := securitytest.InternalTLS(t, nil)
	log := &testutil.SyncBuffer{}
	r := newRecorder()
	d := startDispatcher(t, "127.0.0.1:0", r, DispatcherConfig{TLS: good, Logger: slog.New(slog.NewTextHandler(log, nil))})
	addr := d.Addr().String()

	h := newTMHandler()
	runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-good", Slots: 1, TLS: good, Handler: h})
	if e := r.next(t, "registered"); e.tm.ID != "tm-good" {
		t.Fatalf("registered %+v", e.tm)
	}
	recvRegistered(t, h)

	// No TLS at all: the JobManager sees no handshake; the TaskManager a
	// connection closed unanswered.
	_, res := runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-plain", Slots: 1, RegistrationTimeout: time.Second, Handler: newTMHandler()})
	wantErr(t, <-res, "closed the connection without answering", "security.ssl.internal.enabled=true")
	waitLog(t, log, "did not start a TLS handshake", "security.ssl.internal.enabled=true")

	// TLS trusting the right CA but no certificate.
	noCert := &TLS{Config: &tls.Config{RootCAs: good.Config.RootCAs}, CAFile: good.CAFile}
	_, res = runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-nocert", Slots: 1, TLS: noCert, Handler: newTMHandler()})
	err := <-res
	if !errors.Is(err, security.ErrHandshake) {
		t.Fatalf("no-certificate TaskManager ended with %v, want ErrHandshake", err)
	}
	wantErr(t, err, "JobManager at "+addr+" refused the TLS handshake", "security.ssl.internal.cert-file/key-file/ca-file")
	waitLog(t, log, "presented no certificate signed by security.ssl.internal.ca-file ("+good.CAFile+")")

	// A certificate of another CA, trusting the JobManager's.
	otherCert, _ := securitytest.InternalTLS(t, caB)
	pool := x509.NewCertPool()
	pool.AddCert(caA.Cert)
	otherCert.Config.RootCAs = pool
	_, res = runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-otherca", Slots: 1, TLS: otherCert, Handler: newTMHandler()})
	wantErr(t, <-res, "refused the TLS handshake", "security.ssl.internal.cert-file/key-file/ca-file")
	waitLog(t, log, "presented a certificate not signed by security.ssl.internal.ca-file")

	// Everything of another CA: the TaskManager refuses the JobManager's
	// certificate, and the JobManager logs that it was refused.
	_, res = runTM(t, TaskManagerConfig{JobManager: addr, ResourceID: "tm-foreign", Slots: 1, TLS: foreign, Handler: newTMHandler()})
	wantErr(t, <-res, "JobManager at "+addr+" presented a certificate not signed by security.ssl.internal.ca-file ("+foreign.CAFile+")")
	waitLog(t, log, "refused this process's certificate")

	select {
	case e := <-r.events:
		t.Fatalf("unexpected %s of %v", e.kind, e.tm)
	default:
	}
}

// TestTLSClient: client RPCs need the certificates too.
func TestTLSClient(t *testing.T) {
	good, _ := securitytest.InternalTLS(t, nil)
	foreign, _ := securitytest.InternalTLS(t, nil)
	jobs := &fakeJobs{}
	d := serveFakeWith(t, DispatcherConfig{BuildID: testBuild, Jobs: jobs, TLS: good})
	addr := d.Addr().String()

	c := dialTest(t, ClientConfig{Address: addr, TLS: good})
	if _, err := c.List(context.Background()); err != nil {
		t.Fatal(err)
	}

	_, err := Dial(context.Background(), ClientConfig{Address: addr, DialTimeout: 2 * time.Second})
	wantErr(t, err, "JobManager at "+addr+" closed the connection without answering", "security.ssl.internal.enabled=true")

	_, err = Dial(context.Background(), ClientConfig{Address: addr, DialTimeout: 2 * time.Second, TLS: foreign})
	if !errors.Is(err, security.ErrHandshake) {
		t.Fatalf("foreign CA: %v, want ErrHandshake", err)
	}
	wantErr(t, err, "presented a certificate not signed by security.ssl.internal.ca-file")

	// A TLS client of a plain JobManager.
	plain := serveFakeWith(t, DispatcherConfig{BuildID: testBuild, Jobs: jobs})
	_, err = Dial(context.Background(), ClientConfig{Address: plain.Addr().String(), DialTimeout: 2 * time.Second, TLS: good})
	wantErr(t, err, "does not speak TLS", "security.ssl.internal.enabled=true")
}

func serveFakeWith(t *testing.T, cfg DispatcherConfig) *Dispatcher {
	t.Helper()
	d, err := StartDispatcher("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// TestTLSStandby: under high availability a standby JobManager's RPC
// serves with the same TLS: a TaskManager of the CA is sent to the leader,
// a plain one is refused.
func TestTLSStandby(t *testing.T) {
	good, _ := securitytest.InternalTLS(t, nil)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &testutil.SyncBuffer{}
	self := LeaderInfo{ID: "jm-standby", RPCAddress: ln.Addr().String()}
	leader := LeaderInfo{ID: "jm-leader", RPCAddress: "127.0.0.1:1", Term: 3}
	sb := serveStandby(ln, self, func() LeaderInfo { return leader }, good, slog.New(slog.NewTextHandler(log, nil)))
	defer sb.stop()

	c := dialTest(t, ClientConfig{Address: self.RPCAddress, TLS: good})
	if _, err := c.List(context.Background()); err == nil || strings.Contains(err.Error(), "TLS") {
		t.Fatalf("List on a standby over TLS: %v, want the leader's refusal", err)
	}
	_, err = Dial(context.Background(), ClientConfig{Address: self.RPCAddress, DialTimeout: 2 * time.Second})
	wantErr(t, err, "closed the connection without answering", "security.ssl.internal.enabled=true")
	waitLog(t, log, "did not start a TLS handshake")
}
