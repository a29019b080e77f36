package rest

import (
	"net/http"
	"strings"
)

// ExceptionEntry is one failure of the job's exception history.
type ExceptionEntry struct {
	ExceptionName string `json:"exceptionName"`
	Stacktrace    string `json:"stacktrace"`
	// Timestamp is when it happened, in Unix milliseconds; weir keeps
	// only the text of the last failure, so it is absent.
	Timestamp            *int64            `json:"timestamp"`
	TaskName             *string           `json:"taskName"`
	Location             *string           `json:"location"`
	FailureLabels        map[string]string `json:"failureLabels"`
	ConcurrentExceptions []ExceptionEntry  `json:"concurrentExceptions"`
}

// ExceptionHistory is the exceptionHistory of GET /jobs/{jobid}/exceptions.
type ExceptionHistory struct {
	Entries   []ExceptionEntry `json:"entries"`
	Truncated bool             `json:"truncated"`
}

// JobExceptions is the body of GET /jobs/{jobid}/exceptions (Flink's
// JobExceptionsInfoWithHistory): the job's last failure, the root cause
// of its latest restart or of its end, with its text. weir keeps only the
// last one, so the history holds at most one entry.
type JobExceptions struct {
	RootException    *string          `json:"root-exception"`
	Timestamp        *int64           `json:"timestamp"`
	AllExceptions    []any            `json:"all-exceptions"`
	Truncated        bool             `json:"truncated"`
	ExceptionHistory ExceptionHistory `json:"exceptionHistory"`
}

func (a *api) exceptions(w http.ResponseWriter, _ *http.Request, j Job) {
	out := JobExceptions{AllExceptions: []any{}, ExceptionHistory: ExceptionHistory{Entries: []ExceptionEntry{}}}
	if f := j.Status().LastFailure(); f != "" {
		out.RootException = &f
		name, _, _ := strings.Cut(f, ":")
		out.ExceptionHistory.Entries = append(out.ExceptionHistory.Entries, ExceptionEntry{
			ExceptionName: name, Stacktrace: f, FailureLabels: map[string]string{}, ConcurrentExceptions: []ExceptionEntry{},
		})
	}
	writeJSON(w, http.StatusOK, out)
}
