package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/weirstream/weir/internal/cluster/pb"
	"github.com/weirstream/weir/internal/config"
	"github.com/weirstream/weir/internal/rest"
	"github.com/weirstream/weir/internal/security"
)

// restClient talks to a REST API: a local run's (run --rest-address) or a
// JobManager's.
type restClient struct {
	addr  string
	token string // bearer token; empty: none
	http  *http.Client
	// tls is set with security.ssl.rest.enabled: the client speaks https.
	tls bool
}

func newRESTClient(addr, token string) restClient {
	// Each request is short: savepoints are polled (operation).
	hc := &http.Client{Timeout: time.Minute}
	if token != "" {
		// A standby JobManager redirects to the leader, which may be on
		// another host; net/http drops Authorization on such a redirect.
		// The token is the cluster's, so send it to the leader too.
		hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}
	}
	return restClient{addr: addr, token: token, http: hc}
}

// withTLS makes c speak https trusting t's CAs (security.ssl.rest.*); a
// nil t leaves it on http.
func (c restClient) withTLS(t *security.REST) restClient {
	if t == nil {
		return c
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = t.Client
	c.http = &http.Client{Timeout: c.http.Timeout, Transport: tr}
	c.tls = true
	return c
}

func (c restClient) scheme() string {
	if c.tls {
		return "https"
	}
	return "http"
}

func (c restClient) Close() error { return nil }

func jobPath(job string) string { return "/jobs/" + url.PathEscape(job) }

// do sends body (if not nil) as JSON and decodes the JSON answer into out;
// an error body ({"errors": [...]}) becomes the error.
func (c restClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.scheme()+"://"+c.addr+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if hint := restTLSHint(c.addr, c.tls, err); hint != "" {
			return fmt.Errorf("%w: %s", err, hint)
		}
		return fmt.Errorf("%w; is a job running with --rest-address %s?", err, c.addr)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("read the answer of %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e rest.ErrorResponse
		if json.Unmarshal(data, &e) == nil && len(e.Errors) > 0 {
			return fmt.Errorf("%s", e.Errors[0])
		}
		if !c.tls && bytes.Contains(data, []byte("HTTP request to an HTTPS server")) {
			return fmt.Errorf("the REST API at %s serves https: set %s=true (and %s to its CA)", c.addr, config.SSLRESTEnabled, config.SSLRESTCAFile)
		}
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

func (c restClient) List(ctx context.Context) ([]*pb.JobSummary, error) {
	var o rest.JobsOverview
	if err := c.do(ctx, http.MethodGet, "/jobs/overview", nil, &o); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	out := make([]*pb.JobSummary, 0, len(o.Jobs))
	for _, j := range o.Jobs {
		// The REST API does not name a job's kind.
		out = append(out, &pb.JobSummary{Name: j.Name, Kind: "-", State: j.State,
			StartUnixMillis: max(j.StartTime, 0), EndUnixMillis: max(j.EndTime, 0)})
	}
	return out, nil
}

func (c restClient) Cancel(ctx context.Context, job string) error {
	if err := c.do(ctx, http.MethodPatch, jobPath(job)+"?mode=cancel", nil, nil); err != nil {
		return fmt.Errorf("cancel job %s: %w", job, err)
	}
	return nil
}

func (c restClient) Checkpoints(ctx context.Context, job string) (*pb.CheckpointsResponse, error) {
	var s rest.CheckpointingStatistics
	if err := c.do(ctx, http.MethodGet, jobPath(job)+"/checkpoints", nil, &s); err != nil {
		return nil, fmt.Errorf("checkpoints of job %s: %w", job, err)
	}
	out := &pb.CheckpointsResponse{Completed: s.Counts.Completed, Failed: s.Counts.Failed}
	if r := s.Latest.Restored; r != nil {
		out.Restored = r.ID
	}
	// The REST API lists newest first; the RPC service oldest first.
	for i := len(s.History) - 1; i >= 0; i-- {
		h := s.History[i]
		out.History = append(out.History, &pb.CheckpointStats{
			Id: h.ID, Kind: h.Kind, Status: h.Status, TriggerUnixMillis: h.TriggerTimestamp,
			DurationMillis: h.EndToEndDuration, StateSize: h.StateSize,
			Acknowledged: int32(h.NumAcknowledgedSubtasks), Subtasks: int32(h.NumSubtasks), Failure: h.FailureMessage, FailureCause: h.FailureCause,
		})
	}
	return out, nil
}

func (c restClient) Savepoint(ctx context.Context, job, target string) (string, error) {
	loc, err := c.operation(ctx, job, "savepoints", rest.SavepointRequest{TargetDirectory: target})
	if err != nil {
		return "", fmt.Errorf("savepoint of job %s: %w", job, err)
	}
	return loc, nil
}

func (c restClient) Stop(ctx context.Context, job, target string) (string, error) {
	loc, err := c.operation(ctx, job, "stop", rest.StopRequest{TargetDirectory: target})
	if err != nil {
		return "", fmt.Errorf("stop job %s: %w", job, err)
	}
	return loc, nil
}

func (c restClient) Rescale(ctx context.Context, job string, req rest.ResourceRequirements) (rest.RescaleResponse, error) {
	var out rest.RescaleResponse
	if err := c.do(ctx, http.MethodPut, jobPath(job)+"/resource-requirements", req, &out); err != nil {
		return out, fmt.Errorf("rescale job %s: %w", job, err)
	}
	return out, nil
}

// operation starts an asynchronous savepoint or stop (POST
// /jobs/{job}/{kind}) and polls its trigger id until it completed,
// returning the savepoint's location.
func (c restClient) operation(ctx context.Context, job, kind string, body any) (string, error) {
	var tr rest.TriggerResponse
	if err := c.do(ctx, http.MethodPost, jobPath(job)+"/"+kind, body, &tr); err != nil {
		return "", err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var st rest.SavepointStatus
		if err := c.do(ctx, http.MethodGet, jobPath(job)+"/"+kind+"/"+url.PathEscape(tr.RequestID), nil, &st); err != nil {
			return "", err
		}
		if st.Status.ID == "COMPLETED" && st.Operation != nil {
			if st.Operation.FailureCause != "" {
				return "", fmt.Errorf("failed: %s", st.Operation.FailureCause)
			}
			return st.Operation.Location, nil
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-tick.C:
		}
	}
}
