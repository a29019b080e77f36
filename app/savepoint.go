package main

import (
	stdbytes "bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/rest"
)

// restClient talks to a running job's REST API.
type restClient struct {
	base string
	http *http.Client
}

func newRESTClient(addr string) restClient {
	return restClient{base: "http://" + addr, http: &http.Client{Timeout: 15 * time.Minute}}
}

// post sends body as JSON and decodes the JSON answer into out; an error
// body ({"errors": [...]}) becomes the error.
func (c restClient) post(path string, body, out any) error {
	b, _ := json.Marshal(body)
	resp, err := c.http.Post(c.base+path, "application/json", stdbytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%w; is a job running with --rest-address %s?", err, c.base[len("http://"):])
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		var e struct {
			Errors []string `json:"errors"`
		}
		if json.Unmarshal(data, &e) == nil && len(e.Errors) > 0 {
			return fmt.Errorf("%s", e.Errors[0])
		}
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

func savepointPath(job string) string { return "/jobs/" + url.PathEscape(job) }

func newSavepointCmd() *cobra.Command {
	var addr, target string
	c := &cobra.Command{
		Use:   "savepoint JOB",
		Short: "Take a savepoint of a running job through a REST API: a JobManager's, or a local run's --rest-address",
		Long: `savepoint asks the running job for a checkpoint and copies it into a new
folder under --target: self-contained and relocatable, never deleted by
retention. Resume from it with 'weir run … --from PATH' at any parallelism.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if target == "" {
				return usagef("--target is required: the folder to write the savepoint into")
			}
			abs, err := absLocation(target)
			if err != nil {
				return usagef("--target %s: %v", target, err)
			}
			var st rest.SavepointStatus
			if err := newRESTClient(addr).post(savepointPath(args[0])+"/savepoints", rest.SavepointRequest{TargetDirectory: abs}, &st); err != nil {
				return fmt.Errorf("savepoint of job %s: %w", args[0], err)
			}
			if st.Status.ID != "COMPLETED" {
				return fmt.Errorf("savepoint of job %s failed: %s", args[0], st.Operation.FailureCause)
			}
			fmt.Fprintln(os.Stdout, st.Operation.Location)
			return nil
		},
	}
	c.Flags().StringVar(&addr, "rest-address", "127.0.0.1:8081", "REST address of the running job")
	c.Flags().StringVar(&target, "target", "", "folder to write the savepoint into")
	return c
}

func newStopCmd() *cobra.Command {
	var addr, target string
	c := &cobra.Command{
		Use:   "stop JOB",
		Short: "Stop a running job gracefully, optionally with a final savepoint",
		Long: `stop makes every source stop reading, takes the final checkpoint, lets the
two-phase-commit sinks commit, and ends the job (exit 0). With --savepoint
DIR the final checkpoint is also copied into a savepoint folder under DIR,
from which 'weir run … --from PATH' continues where the job stopped.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := rest.StopRequest{}
			if target != "" {
				abs, err := absLocation(target)
				if err != nil {
					return usagef("--savepoint %s: %v", target, err)
				}
				body.TargetDirectory = abs
			}
			var st rest.SavepointStatus
			if err := newRESTClient(addr).post(savepointPath(args[0])+"/stop", body, &st); err != nil {
				return fmt.Errorf("stop job %s: %w", args[0], err)
			}
			if st.Status.ID != "COMPLETED" {
				return fmt.Errorf("stop job %s failed: %s", args[0], st.Operation.FailureCause)
			}
			if st.Operation.Location != "" {
				fmt.Fprintln(os.Stdout, st.Operation.Location)
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "rest-address", "127.0.0.1:8081", "REST address of the running job")
	c.Flags().StringVar(&target, "savepoint", "", "folder to write a final savepoint into")
	return c
}
