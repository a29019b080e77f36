package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/security"
)

// newCertsCmd is `weir tools certs`: a CA and one certificate for trying
// TLS on one machine.
func newCertsCmd() *cobra.Command {
	var (
		out      string
		validFor time.Duration
	)
	c := &cobra.Command{
		Use:   "certs",
		Short: "Write a CA and a certificate for localhost, for trying TLS on one machine",
		Long: `certs writes, into --out, ca.pem (a new self-signed ECDSA P-256 CA),
node.pem and node-key.pem (a certificate that CA signed, valid for localhost
and 127.0.0.1, for server and client authentication). Every process and
client of a cluster on this machine can use them:

  -D security.ssl.internal.enabled=true
  -D security.ssl.internal.cert-file=DIR/node.pem
  -D security.ssl.internal.key-file=DIR/node-key.pem
  -D security.ssl.internal.ca-file=DIR/ca.pem

(and the same under security.ssl.rest. for https). The CA's key is not
kept: make new files to add a machine. For production use your own CA and
one certificate per host.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out is empty: give the folder to write ca.pem, node.pem and node-key.pem to")
			}
			if validFor <= 0 {
				return usagef("--valid-for must be positive, got %s", validFor)
			}
			if err := security.WriteCerts(out, validFor); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "wrote %s, %s and %s (valid for %s until %s)\n",
				filepath.Join(out, security.CAFileName), filepath.Join(out, security.CertFileName), filepath.Join(out, security.KeyFileName),
				security.LocalHosts, time.Now().Add(validFor).Format(time.DateOnly))
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "folder to write the files to (created if absent; existing files are not overwritten)")
	c.Flags().DurationVar(&validFor, "valid-for", 365*24*time.Hour, "how long the CA and the certificate are valid")
	return c
}
