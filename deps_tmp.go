//go:build deps

// This file pins the modules issues 3 and 5 add (gRPC and protobuf; Pebble, minio-go, gofakes3) while
// their packages are being written in parallel, so that go mod tidy keeps
// them; it goes away once the packages import them.
package weir

import (
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/johannesboyne/gofakes3"
	_ "github.com/minio/minio-go/v7"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
)
