package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/jobstatus"
)

// savepointTimeout bounds how long a savepoint or stop operation waits for
// its checkpoint to complete and be copied.
const savepointTimeout = 10 * time.Minute

// maxOperations is how many finished savepoint and stop operations the
// API remembers for polling; the oldest are forgotten first.
const maxOperations = 256

// SavepointRequest is the body of POST /jobs/{jobid}/savepoints (Flink's
// field names).
type SavepointRequest struct {
	// TargetDirectory is where the savepoint goes: under
	// state.savepoints.dir (empty: that folder itself; relative: a folder
	// under it).
	TargetDirectory string `json:"target-directory"`
	// CancelJob stops the job after the savepoint (Flink's cancel-job;
	// weir stops gracefully, committing the sinks).
	CancelJob bool `json:"cancel-job"`
}

// StopRequest is the body of POST /jobs/{jobid}/stop (Flink's field name).
type StopRequest struct {
	TargetDirectory string `json:"targetDirectory"`
}

// SavepointOperation is the result of a savepoint: where it was written.
type SavepointOperation struct {
	Location     string `json:"location,omitempty"`
	FailureCause string `json:"failure-cause,omitempty"`
}

// SavepointStatus is the body of GET /jobs/{jobid}/savepoints/{triggerid}
// and GET /jobs/{jobid}/stop/{triggerid}, Flink's asynchronous operation
// result: IN_PROGRESS without an operation, then COMPLETED with the
// savepoint's location or its failure-cause.
type SavepointStatus struct {
	Status    OperationStatus     `json:"status"`
	Operation *SavepointOperation `json:"operation,omitempty"`
}

// operation is one savepoint or stop in progress or done.
type operation struct {
	job, kind string
	done      bool
	polled    bool // its result was answered
	result    SavepointOperation
}

// operations remembers the savepoint and stop operations by trigger id.
type operations struct {
	mu    sync.Mutex
	ops   map[string]*operation
	order []string // trigger ids, oldest first
}

func (o *operations) add(job, kind string) (string, *operation) {
	var b [16]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	op := &operation{job: job, kind: kind}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ops == nil {
		o.ops = map[string]*operation{}
	}
	o.ops[id] = op
	o.order = append(o.order, id)
	// Forget the oldest finished operations beyond the bound; running
	// ones stay (at most one per job can run at a time in practice).
	for i := 0; len(o.ops) > maxOperations && i < len(o.order); {
		if old := o.ops[o.order[i]]; old.done {
			delete(o.ops, o.order[i])
			o.order = append(o.order[:i], o.order[i+1:]...)
			continue
		}
		i++
	}
	return id, op
}

func (o *operations) finish(op *operation, path string, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	op.done = true
	if err != nil {
		op.result.FailureCause = err.Error()
	} else {
		op.result.Location = path
	}
}

func (o *operations) status(job, kind, id string) (SavepointStatus, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	op := o.ops[id]
	if op == nil || op.job != job || op.kind != kind {
		return SavepointStatus{}, false
	}
	if !op.done {
		return SavepointStatus{Status: OperationStatus{ID: "IN_PROGRESS"}}, true
	}
	res := op.result
	op.polled = true
	return SavepointStatus{Status: OperationStatus{ID: "COMPLETED"}, Operation: &res}, true
}

// decodeBody decodes r's JSON body into v; an empty body leaves v as is.
// The body is limited to maxBody by ServeHTTP.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func (a *api) savepoint(w http.ResponseWriter, r *http.Request, j Job) {
	var req SavepointRequest
	if err := decodeBody(r, &req); err != nil {
		a.fail(w, r, http.StatusBadRequest, `savepoint: send {"target-directory": "DIR"} (and optionally "cancel-job": true): `+err.Error())
		return
	}
	kind := "savepoint"
	if req.CancelJob {
		kind = "stop"
	}
	a.startOperation(w, r, j, kind, req.TargetDirectory, false)
}

func (a *api) stop(w http.ResponseWriter, r *http.Request, j Job) {
	var req StopRequest
	if err := decodeBody(r, &req); err != nil {
		a.fail(w, r, http.StatusBadRequest, `stop: send {"targetDirectory": "DIR"} for a final savepoint, or {} to stop without one: `+err.Error())
		return
	}
	a.startOperation(w, r, j, "stop", req.TargetDirectory, true)
}

// startOperation checks the target, starts the savepoint or stop in the
// background and answers 202 with its trigger id (Flink's
// TriggerResponse), to poll at GET /jobs/{jobid}/{savepoints|stop}/{id}.
// A stop without a target (optional) takes no savepoint.
func (a *api) startOperation(w http.ResponseWriter, r *http.Request, j Job, kind, raw string, optional bool) {
	target := ""
	if raw != "" || !optional {
		t, code, msg := a.savepointTarget(raw)
		if msg != "" {
			a.fail(w, r, code, kind+" of job "+strconv.Quote(j.ID())+": "+msg)
			return
		}
		target = t
	}
	s := j.Status()
	if st := s.State(); st != jobstatus.StateRunning {
		a.fail(w, r, http.StatusConflict, kind+" of job "+strconv.Quote(j.ID())+": "+jobstatus.ErrNotRunning.Error()+" (it is "+string(st)+")")
		return
	}
	id, op := a.ops.add(j.ID(), kind)
	c := j.Control()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), savepointTimeout)
		defer cancel()
		var path string
		var err error
		if kind == "stop" {
			path, err = c.StopWithSavepoint(ctx, target)
		} else {
			path, err = c.TriggerSavepoint(ctx, target)
		}
		a.ops.finish(op, path, err)
	}()
	writeJSON(w, http.StatusAccepted, TriggerResponse{RequestID: id})
}

// validTriggerID reports whether s looks like a trigger id this API made
// (32 hex digits).
func validTriggerID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// operationStatus answers a savepoint or stop operation. It is looked up
// before the job: a stopped job leaves the JobManager's job list when it
// finishes, and its stop's result must stay readable.
func (a *api) operationStatus(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		jobID, id := r.PathValue("jobid"), r.PathValue("triggerid")
		st, ok := a.ops.status(jobID, kind, id)
		if !ok && kind == "savepoint" {
			// A savepoint with cancel-job is a stop; Flink polls it at
			// savepoints/{triggerid}.
			st, ok = a.ops.status(jobID, "stop", id)
		}
		if ok {
			writeJSON(w, http.StatusOK, st)
			return
		}
		a.withJob(func(w http.ResponseWriter, r *http.Request, j Job) {
			path := "savepoints"
			if kind == "stop" {
				path = "stop"
			}
			if !validTriggerID(id) {
				a.fail(w, r, http.StatusNotFound, "trigger id "+strconv.Quote(id)+" is not one: want the 32 hex digits of the request-id that POST /jobs/"+j.ID()+"/"+path+" answered")
				return
			}
			a.fail(w, r, http.StatusNotFound, "no "+kind+" operation "+id+" of job "+strconv.Quote(j.ID())+" (the API remembers the last "+strconv.Itoa(maxOperations)+", until it restarts); POST /jobs/"+j.ID()+"/"+path+" starts one")
		})(w, r)
	}
}

// AwaitPolled waits until every savepoint and stop operation has finished
// and its result has been answered at least once, or ctx ends. A local
// run calls it before shutting the API down when its job ended, so that
// the client of a stop (weir stop) reads the result.
func (h *Handler) AwaitPolled(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !h.a.ops.allPolled() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (o *operations) allPolled() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, op := range o.ops {
		if !op.polled {
			return false
		}
	}
	return true
}
