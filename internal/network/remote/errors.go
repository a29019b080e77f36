package remote

import "errors"

// Sentinels callers test with errors.Is.
var (
	// ErrConnClosed marks a channel whose connection closed or broke
	// before the channel ended: its task fails.
	ErrConnClosed = errors.New("network connection closed")
	// ErrCancelled marks an OutChannel whose consumer cancelled the
	// partition (CancelPartition): the consumer's region is being
	// cancelled, and so is the producer's.
	ErrCancelled = errors.New("partition cancelled by its consumer")
	// ErrClosed marks a channel closed by its own task.
	ErrClosed = errors.New("channel closed")
	// ErrGateFull marks a Reopen refused because the gate channel still
	// holds as many buffers of the earlier input as it has credits: try
	// again once the task read one.
	ErrGateFull = errors.New("gate channel full of an earlier input's buffers")
	// ErrPartition marks a partition request the producer refused: no
	// such partition was deployed within the connect timeout, its attempt
	// was superseded, or it is subscribed already.
	ErrPartition = errors.New("partition request refused")
)
